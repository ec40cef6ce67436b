"""The group commit of local store writes (store/commit.py, ADR 0018)."""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

from taguru_ray.contract.names import TRACE
from taguru_ray.engine.recorder import StoreRecorder
from taguru_ray.store import commit
from taguru_ray.store.checkpoints import Checkpoint
from taguru_ray.store.journal import Journal
from taguru_ray.store.logs import AttemptsLog
from taguru_ray.store.outdir import OutDir


class _WatchedBarrier(commit._Barrier):
    """The real barrier, noting what each sync saw: which paths, and which targets existed."""

    def __init__(self, targets: list[Path]) -> None:
        super().__init__()
        self.calls: list[list[str]] = []
        self.targets_at_sync: list[list[bool]] = []
        self._targets = targets

    def sync(self, paths: list[str]) -> dict[str, OSError]:
        self.calls.append(list(paths))
        self.targets_at_sync.append([target.exists() for target in self._targets])
        return super().sync(paths)


def _in_a_loop(test: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., None]:
    """Run an async test in a fresh event loop (the suite's tests call asyncio.run)."""

    @functools.wraps(test)
    def run(*args: Any, **kwargs: Any) -> None:
        asyncio.run(test(*args, **kwargs))

    return run


def _ops(loop: asyncio.AbstractEventLoop, *calls: tuple) -> list[commit._Op]:
    return [commit._Op(fn, args, loop, loop.create_future()) for fn, *args in calls]


@_in_a_loop
async def test_a_batch_pays_one_barrier_and_renames_only_after_it(tmp_path: Path) -> None:
    out = OutDir(str(tmp_path))
    names = [f"f{i}.json" for i in range(5)]
    targets = [tmp_path / name for name in names]
    committer = commit.Committer()
    barrier = _WatchedBarrier(targets)
    committer._barrier = barrier
    loop = asyncio.get_running_loop()
    ops = _ops(loop, *((out.write, name, name.encode()) for name in names))

    await asyncio.to_thread(committer.commit, ops)
    await asyncio.gather(*(op.future for op in ops))

    assert len(barrier.calls) == 1 and len(barrier.calls[0]) == 5  # five temp files, one sync
    assert barrier.targets_at_sync == [[False] * 5]  # nothing renamed before its bytes are durable
    assert [target.read_bytes() for target in targets] == [name.encode() for name in names]
    assert not [p for p in tmp_path.iterdir() if ".tmp-" in p.name]


@_in_a_loop
async def test_a_failing_entry_fails_alone_and_leaves_no_temp_file(tmp_path: Path) -> None:
    out = OutDir(str(tmp_path))
    (tmp_path / "kept.json").write_bytes(b"old")

    def write_then_fail() -> None:
        out.write("kept.json", b"new")
        raise ValueError("the encoder broke")

    committer = commit.Committer()
    loop = asyncio.get_running_loop()
    ops = _ops(loop, (write_then_fail,), (out.write, "other.json", b"fine"))
    await asyncio.to_thread(committer.commit, ops)

    with pytest.raises(ValueError, match="the encoder broke"):
        await ops[0].future
    await ops[1].future
    assert (tmp_path / "kept.json").read_bytes() == b"old"  # its staged write was dropped
    assert (tmp_path / "other.json").read_bytes() == b"fine"
    assert not [p for p in tmp_path.iterdir() if ".tmp-" in p.name]


@_in_a_loop
async def test_bytes_that_cannot_be_made_durable_are_never_renamed_in(tmp_path: Path) -> None:
    out = OutDir(str(tmp_path))
    (tmp_path / "a.json").write_bytes(b"old")

    class FailingBarrier(commit._Barrier):
        def sync(self, paths: list[str]) -> dict[str, OSError]:
            return {path: OSError(5, "Input/output error") for path in paths}

    committer = commit.Committer()
    committer._barrier = FailingBarrier()
    loop = asyncio.get_running_loop()
    ops = _ops(loop, (out.write, "a.json", b"new"))
    await asyncio.to_thread(committer.commit, ops)

    with pytest.raises(OSError, match="Input/output error"):
        await ops[0].future
    assert (tmp_path / "a.json").read_bytes() == b"old"
    assert not [p for p in tmp_path.iterdir() if ".tmp-" in p.name]


def test_the_barrier_syncs_each_filesystem_once_or_each_file_without_syncfs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = []
    for name in ("a", "b", "c"):
        (tmp_path / name).write_bytes(b"x")
        files.append(str(tmp_path / name))
    barrier = commit._Barrier()
    if barrier._syncfs is not None:  # Linux: the real syscall, once for the one filesystem
        seen: list[int] = []
        real = barrier._syncfs
        barrier._syncfs = lambda fd: seen.append(fd) or real(fd)
        assert barrier.sync(files) == {}
        assert len(seen) == 1
    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(commit.os, "fsync", lambda fd: synced.append(fd) or real_fsync(fd))
    barrier._syncfs = None
    assert barrier.sync([*files, files[0]]) == {}  # a file staged twice is synced once
    assert len(synced) == 3
    failures = barrier.sync([str(tmp_path / "missing")])
    assert list(failures) == [str(tmp_path / "missing")]


@_in_a_loop
async def test_offload_runs_store_writes_and_returns_their_result(tmp_path: Path) -> None:
    out = OutDir(str(tmp_path))
    checkpoint = Checkpoint(out, "docs/a.md", {"sha256": "x"})
    await asyncio.gather(
        out.offload(checkpoint.save, "p1", {"chunk_index": 0}),
        out.offload(out.write, "b.json", b"{}"),
    )
    bind = functools.partial(checkpoint.bind_overview, "digest", keep=False)
    assert await out.offload(bind) is False
    again = Checkpoint(out, "docs/a.md", {"sha256": "x"})
    assert again.load() is None and list(again.units) == ["p1"]
    assert again.overview_digest == "digest"
    assert (tmp_path / "b.json").read_bytes() == b"{}"

    memory = OutDir("memory://taguru-offload-test")  # not local: a thread, as before
    await memory.offload(memory.write, "c.json", b"[]")
    assert memory.read("c.json") == b"[]"


@_in_a_loop
async def test_appends_in_a_batch_are_durable_and_in_order(tmp_path: Path) -> None:
    out = OutDir(str(tmp_path))
    log = AttemptsLog(out, f"{TRACE}/a.attempts.jsonl")
    await out.offload(lambda: (log.open(fresh=True), log.write_many([{"n": 0}])))
    await asyncio.gather(*(out.offload(log.write_many, [{"n": n}]) for n in range(1, 4)))
    log.close()
    lines = (tmp_path / TRACE / "a.attempts.jsonl").read_text().splitlines()
    assert lines == ['{"n":0}', '{"n":1}', '{"n":2}', '{"n":3}']


@_in_a_loop
async def test_a_cancelled_caller_still_gets_its_write_and_breaks_nothing(tmp_path: Path) -> None:
    out = OutDir(str(tmp_path))
    waiting = asyncio.ensure_future(out.offload(out.write, "a.json", b"done"))
    await asyncio.sleep(0)
    waiting.cancel()
    await out.offload(out.write, "b.json", b"after")  # the committer goes on serving
    assert (tmp_path / "a.json").read_bytes() == b"done"
    assert (tmp_path / "b.json").read_bytes() == b"after"


@_in_a_loop
async def test_a_trace_that_cannot_be_written_is_a_note_after_the_source_file(
    tmp_path: Path,
) -> None:
    out = OutDir(str(tmp_path))
    out.ensure()
    (tmp_path / TRACE).rmdir()
    (tmp_path / TRACE).write_text("a file where the trace folder should be")
    recorder = StoreRecorder(
        out,
        "docs/a.md",
        journal=Journal(out),
        trace_attempts=False,
        sidecar=None,
        sidecar_path=None,
    )
    notes = await recorder.finish(b"source", b"trace")
    assert len(notes) == 1 and notes[0].startswith(f"could not write the trace {TRACE}/")
    written = [p for p in tmp_path.iterdir() if p.is_file() and p.suffix == ".jsonl"]
    assert [p.read_bytes() for p in written] == [b"source"]


@_in_a_loop
async def test_a_batch_that_breaks_fails_its_callers_and_the_thread_serves_on(
    tmp_path: Path,
) -> None:
    out = OutDir(str(tmp_path))

    class BrokenOnce(commit._Barrier):
        broken = True

        def sync(self, paths: list[str]) -> dict[str, OSError]:
            if self.broken:
                self.broken = False
                raise RuntimeError("the barrier broke")
            return super().sync(paths)

    committer = commit.Committer()
    committer._barrier = BrokenOnce()
    with pytest.raises(RuntimeError, match="the barrier broke"):
        await committer.run(out.write, "a.json", b"lost")
    await committer.run(out.write, "b.json", b"kept")
    assert (tmp_path / "b.json").read_bytes() == b"kept"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.json"]  # no temp file left
