"""The driver's reading, started before Ray: the scan-ahead, the manifest, the --out
listing, the digest helper, and the early settling.

Ray takes seconds to start; reading needs none of it. `start` sets it going on
threads (`engine/ahead.py`): the manifest (a million entries take seconds to
parse), the --out listing, the segments a batch ahead — hashed by a helper
process when that is quicker (`engine/digest_helper.py`, ADR 0046) — and the
early settling, which settles the leading segments that need no worker
(unchanged, or refused) through `Skipping` while Ray comes up.

The early settling hands over to the dispatch loop at its next segment once the
run asks (`hand_over`): the scan-ahead has one consumer at a time, and
`early`'s result orders the change.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Container
from concurrent.futures import Future, ThreadPoolExecutor, wait

from taguru_ray.contract.names import MANIFEST, MANIFEST_JOURNAL
from taguru_ray.engine.ahead import READERS, ScanAhead
from taguru_ray.engine.digest_helper import DigestHelper, worth_a_helper
from taguru_ray.engine.scan import Scanned, read_scanned, scan
from taguru_ray.engine.segment import FAILURE_PREFIX
from taguru_ray.engine.skipping import Skipping
from taguru_ray.engine.window import SegmentWindow
from taguru_ray.engine.written_ids import WrittenIds
from taguru_ray.pipeline.run_inputs import RunInputs
from taguru_ray.pipeline.steer import Contribution
from taguru_ray.pipeline.vocabulary import contribution
from taguru_ray.settings import Settings
from taguru_ray.store.corpus import Corpus
from taguru_ray.store.inputs import read_source
from taguru_ray.store.manifest import Manifest
from taguru_ray.store.outdir import OutDir


class Reading:
    def __init__(
        self,
        settings: Settings,
        out: OutDir,
        sources: list[str],
        inputs: RunInputs,
        read: Callable[[str], bytes],
        window: SegmentWindow,
        skipping: Skipping,
        say: Callable[[str], None],
        stopped: Callable[[], bool],
    ) -> None:
        self._settings = settings
        self._out = out
        self._sources = sources
        self.inputs = inputs
        self.read = read  # the segments' reader: files, or a run's in-memory segments
        self._window = window
        self._skipping = skipping
        self._say = say
        self._stopped = stopped  # a stop was asked for: the early settling ends
        self.seed: Contribution | None = None  # the target context's, below every segment
        self._readers: ThreadPoolExecutor | None = None
        self._helper: DigestHelper | None = None
        self._handover = threading.Event()
        # Set by `start`. `early`: the early settling, True when it stopped at a segment
        # that needs a worker.
        self.scanner: ScanAhead
        self.early: Future[bool]
        self._manifest_loading: Future[tuple[Manifest, str | None]]
        self._listing: Future[Container[str]]

    def start(self) -> None:
        """Start reading on threads: the manifest, the --out listing, the segments a batch
        ahead, and the early settling of the leading segments that need no worker. Called
        before Ray starts; again, a no-op."""
        if self._readers is not None:
            return
        if self.inputs.vocabulary is not None:
            # The target context is one more finished segment, below every real one:
            # its labels seed the reuse list, its names the claimed-names check.
            self.seed = contribution(self.inputs.vocabulary)
            self._window.seed(self.seed)
        self._helper = DigestHelper.start() if self.wants_helper() else None
        readers = self._readers = ThreadPoolExecutor(READERS, thread_name_prefix="taguru-read")
        self._manifest_loading = readers.submit(Manifest.load, self._out)
        self._listing = readers.submit(self._out.presence)
        sources = self._sources
        seen = WrittenIds.of(sources, self._settings.source.source_id, self.inputs)
        several = len(sources) > 1
        helper = self._helper
        # A corpus read through its parts (a dataset's rows are no files), unless the run
        # reads segments of its own (staged sessions).
        corpus = sources if isinstance(sources, Corpus) and self.read is read_source else None

        def scan_one(index: int, digest: str | None) -> Scanned:
            source = sources[index]
            read = self.read if corpus is None else (lambda _: corpus.read(index))
            document = corpus.document(index) if corpus is not None else None
            scanned = scan(
                self._settings, index, source, several, seen, self.inputs, read, digest, document
            )
            if scanned.unread and not self._skipping.unchanged_by(scanned, self._inputs_now()):
                # The helper hashed it, and a worker needs its bytes: read here, on the
                # batch's thread, as without a helper.
                scanned = read_scanned(self._settings, scanned, self.inputs, read)
            return scanned

        serial = corpus is not None and corpus.serial
        self.scanner = ScanAhead(
            len(sources),
            scan_one,
            readers,
            (lambda batch: helper.digests([sources[i] for i in batch])) if helper else None,
            corpus.serial_end if serial and corpus is not None else None,
            corpus.next_serial if serial and corpus is not None else None,
        )
        self.early = readers.submit(self._settle_early)

    @property
    def manifest_loading(self) -> Future[tuple[Manifest, str | None]]:
        """The manifest being loaded (and the note when it could not be used)."""
        return self._manifest_loading

    def wants_helper(self) -> bool:
        """Whether a child process should hash the segments (`digest_helper.py`)."""
        sources = self._sources
        return worth_a_helper(
            len(sources),
            skippable=self._skipping.skippable,
            files=self.read is read_source
            and "://" not in (sources[0] if sources else "")
            and not (isinstance(sources, Corpus) and sources.serial),
            redacting=bool(self.inputs.redaction),
            coverage=self._skipping.coverage,
            manifest=self._out.local and any(map(self._out.exists, (MANIFEST, MANIFEST_JOURNAL))),
        )

    def hand_over(self) -> None:
        """The early settling stops at its next segment: the dispatch loop goes on."""
        self._handover.set()

    def stop(self) -> None:
        """End the early settling and wait for the reads under way (each ends within a
        batch): called once the run is over, or when Ray failed to start."""
        self._handover.set()
        if self._readers is not None:
            wait([self.early])  # it stops at its next segment
            self._readers.shutdown(wait=True, cancel_futures=True)
        if self._helper is not None:
            self._helper.close()

    def _settle_early(self) -> bool:
        """While Ray starts: settle segments in order for as long as none needs a worker.
        True when it stopped at one that does."""
        self._take_inputs()
        skipping = self._skipping
        while not (self._stopped() or self._handover.is_set()):
            scanned = self.scanner.next_now()
            if scanned is None:
                return False
            if scanned.inputs is None:
                skipping.refuse(scanned)
            elif skipping.unchanged(scanned):
                skipping.skip(scanned, skipping.gaps(scanned))
            else:
                self.scanner.put_back(scanned)
                return True
        return False

    def _take_inputs(self) -> None:
        """The loaded manifest (and the one note when it could not be used) and listing."""
        manifest, note = self._manifest_loading.result()
        if note:
            self._say(f"{FAILURE_PREFIX}{note}")
        self._skipping.take(manifest, self._listing.result())

    def _inputs_now(self) -> tuple[Manifest, Container[str]]:
        """The manifest and the --out listing, waited for: a batch thread may ask before
        the early settling took them (`_take_inputs`)."""
        manifest, _ = self._manifest_loading.result()
        return manifest, self._listing.result()
