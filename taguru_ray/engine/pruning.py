"""The run's orphans: named once the manifest is in, retired at the commit under --prune
(ADR 0083).

- Before anything is read, under the lock, a prune a killed run left unfinished
  is completed (`complete_pending`, `store/retire.py`): its plan was committed.
- Once the manifest is loaded (on the reader thread that loaded it), the
  manifest's paths the run's inputs cover but no longer hold
  (`store/orphans.py`) are found, and one line says how many, the first few, and
  what `--prune` does about them.
- At the run's commit (`commit`, in place of the plain compaction), under
  `--prune` and unless the run was stopped, they are retired: plan, moves, the
  manifest compacted without them, records (`Retirement.apply`). A renamed
  segment has been written under its new name by then, so the context never
  lacks it between two imports.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future

from taguru_ray.contract.names import RETIRED, join
from taguru_ray.contract.records.retired import records_name, retract_name
from taguru_ray.errors import MESSAGE_PREFIX, StartupError
from taguru_ray.settings import Settings
from taguru_ray.store.manifest import Manifest
from taguru_ray.store.orphans import Coverage, orphans_line
from taguru_ray.store.outdir import OutDir
from taguru_ray.store.retire import Retirement, complete_pending, plan_retirement, segments


class Pruning:
    def __init__(
        self,
        settings: Settings,
        out: OutDir,
        run_id: str,
        corpus: Coverage | None,
        say: Callable[[str], None],
    ) -> None:
        self.prune = settings.run.prune
        self._where = settings.source.out
        self._out = out
        self._run_id = run_id
        self._corpus = corpus  # None: a run over staged segments has no corpus to judge
        self._say = say
        self._found: Future[list[str]] | None = None
        self.retired = 0  # segments this run retired

    def complete_pending(self) -> None:
        """Finish the prunes a killed run left (call under the lock, before reading)."""
        try:
            done = complete_pending(self._out)
        except OSError as error:
            raise StartupError(
                f"--out {self._where}: could not complete the prune a killed run left "
                f"unfinished ({error.strerror or error}) — nothing else was done; rerun once "
                "--out is writable"
            ) from None
        for retirement in done:
            self._say(
                f"{MESSAGE_PREFIX}completed the prune run {retirement.run_id} left unfinished: "
                f"{segments(retirement.records)} segment(s) retired (records: "
                f"{join(self._where, f'{RETIRED}/{records_name(retirement.run_id)}')})"
            )

    def start(self, manifest: Future[tuple[Manifest, str | None]]) -> None:
        """Find the orphans as soon as `manifest` is loaded, on the thread that loaded it."""
        if self._found is not None:
            return
        found: Future[list[str]] = Future()
        self._found = found

        def find(loaded: Future[tuple[Manifest, str | None]]) -> None:
            try:
                found.set_result(self.find(loaded.result()[0]))
            except BaseException as error:  # the commit says it; the run goes on
                found.set_exception(error)

        manifest.add_done_callback(find)

    def find(self, manifest: Manifest) -> list[str]:
        """The manifest's orphans, said in one line when there are any."""
        if self._corpus is None:
            return []
        orphans = self._corpus.orphans(lambda: (path for path, _ in manifest.entries.sorted_rows()))
        if orphans:
            self._say(f"{MESSAGE_PREFIX}{orphans_line(orphans, self.prune)}")
        return orphans

    def orphan(self, path: str) -> bool:
        """Whether the run's inputs cover `path` but no longer hold it."""
        corpus = self._corpus
        return corpus is not None and corpus.covers(path) and not corpus.holds(path)

    def commit(self, manifest: Manifest, *, stopped: bool) -> None:
        """The run's commit: the manifest compacted, and under --prune the orphans retired
        with it. An OSError leaves the plan, when there is one, for the next run."""
        orphans: list[str] = []
        if self.prune and self._found is not None:
            try:
                orphans = self._found.result()
            except Exception as error:  # said; the compaction still comes
                self._say(f"{MESSAGE_PREFIX}--prune: could not judge the orphans ({error})")
        if not orphans:
            manifest.compact()
            return
        if stopped:
            manifest.compact()
            self._say(
                f"{MESSAGE_PREFIX}--prune: nothing retired, the run stopped early — the next "
                "run with --prune retires them"
            )
            return
        records = plan_retirement(self._out, manifest.entries, orphans, self._run_id)
        Retirement(self._out, self._run_id, records).apply(manifest)
        self.retired = segments(records)
        records_at = join(self._where, f"{RETIRED}/{records_name(self._run_id)}")
        stream = join(self._where, f"{RETIRED}/{retract_name(self._run_id)}")
        self._say(
            f"{MESSAGE_PREFIX}retired {self.retired} segment(s) no longer among the inputs: "
            f"their files are in {join(self._where, f'{RETIRED}/{self._run_id}/')}, the "
            f"records in {records_at} — the next `taguru-ray import` retracts them (Taguru's "
            f"own import: `taguru import {stream}`)"
        )
