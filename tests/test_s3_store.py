"""The --out store on S3 (moto's server on loopback): whole-object writes, the manifest
journal, checkpoints, the attempts log, and the lease."""

from __future__ import annotations

import asyncio
import json
import math
import os
import socket
import threading
import time
from collections.abc import Iterable
from typing import Any

import fsspec
import pytest

from taguru_ray.contract.names import LOCK, MANIFEST, MANIFEST_JOURNAL, TRACE, attempts_name
from taguru_ray.engine.recorder import StoreRecorder
from taguru_ray.errors import StartupError
from taguru_ray.store.checkpoints import Checkpoint, count_reusable
from taguru_ray.store.journal import Journal
from taguru_ray.store.lease import (
    Lease,
    LeaseLock,
    Raced,
    ReadBackLeaseStore,
    S3LeaseStore,
    wait_for_deadline,
)
from taguru_ray.store.lock import lock_for
from taguru_ray.store.logs import AttemptsLog, Sidecar
from taguru_ray.store.manifest import ENTRY_DEFAULTS, MANIFEST_INDEX, Manifest, journal_name
from taguru_ray.store.outdir import Fenced, OutDir
from tests import s3 as server
from tests.s3 import S3

s3, s3_env = server.s3, server.s3_env  # the fixtures, registered here by name


@pytest.fixture
def out(s3_env: S3) -> OutDir:
    return OutDir(s3_env.prefix("out"))


def objects(out: OutDir, folder: str = "") -> list[str]:
    """Every object under --out (or a folder of it), as names relative to --out."""
    root = out.path(folder)
    out.fs.invalidate_cache()
    return sorted(path[len(out.root) + 1 :] for path in out.fs.find(root))


def entry(**fields: object) -> dict[str, Any]:
    """A manifest entry of a default run, with `fields` changed."""
    base = {"sha256": "s", "model": "m", "prompt_version": 101, "output": "a.jsonl"}
    return {**ENTRY_DEFAULTS, "context": "c", **base, **fields}


def records(data: bytes | None) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (data or b"").decode().splitlines()]


# --- the folder ------------------------------------------------------------------------


def test_a_write_is_one_whole_object_and_leaves_nothing_else(out: OutDir) -> None:
    out.ensure()  # the prefix does not exist yet: nothing to create, nothing fails
    out.write("a.jsonl", b"one\n")
    out.write("a.jsonl", b"two\n")
    assert out.read("a.jsonl") == b"two\n"
    assert objects(out) == ["a.jsonl"]  # no temp object, no folder marker
    assert out.read("missing") is None and not out.exists("missing")
    out.delete("a.jsonl")
    out.delete("a.jsonl")  # deleting what is gone is no error
    assert objects(out) == []


def test_a_missing_bucket_is_refused_by_ensure(s3_env: S3) -> None:
    with pytest.raises(FileNotFoundError, match="no-such-bucket"):
        OutDir("s3://no-such-bucket/out").ensure()


def test_names_come_from_one_listing_without_per_file_probes(
    out: OutDir, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("a.jsonl", "b.jsonl", ".extract-trace/a.jsonl"):
        out.write(name, b"x")

    def probe(*args: object, **kwargs: object) -> None:
        raise AssertionError("names() probed a file")

    monkeypatch.setattr(out.fs, "info", probe)
    monkeypatch.setattr(out.fs, "exists", probe)
    assert out.names() == {"a.jsonl", "b.jsonl", ".extract-trace"}
    assert out.names(".extract-trace") == {"a.jsonl"}
    assert out.names("nothing-here") == set()


def test_an_object_written_by_another_process_is_seen_at_once(out: OutDir) -> None:
    assert out.names() == set()  # fills s3fs's listing cache
    other = fsspec.filesystem("s3", skip_instance_cache=True)
    other.pipe_file(out.path("late.jsonl"), b"x")
    assert out.names() == {"late.jsonl"} and out.exists("late.jsonl")


# --- the manifest ----------------------------------------------------------------------


def test_record_writes_one_small_journal_entry_and_no_single_file(out: OutDir) -> None:
    manifest, note = Manifest.load(out)
    assert note is None and manifest.entries == {}
    manifest.record("docs/a.md", entry(output="a.jsonl"))
    manifest.record("docs/b.md", entry(output="b.jsonl"))
    assert objects(out) == sorted(
        [journal_name("docs/a.md"), journal_name("docs/b.md")]
    )  # the single file is not rewritten per segment
    one = json.loads(out.read(journal_name("docs/a.md")) or b"")
    assert one == {"source": "docs/a.md", "entry": entry(output="a.jsonl")}


def test_compaction_writes_the_single_file_and_deletes_the_journal(out: OutDir) -> None:
    manifest, _ = Manifest.load(out)
    manifest.record("docs/z.md", entry(output="z.jsonl"))
    manifest.record("docs/a.md", entry(output="a.jsonl"))
    manifest.compact()
    assert objects(out) == [MANIFEST_INDEX, MANIFEST]  # the single file and its index
    text = (out.read(MANIFEST) or b"").decode()
    assert text == manifest.render().decode()
    assert text.index('"docs/a.md"') < text.index('"docs/z.md"')
    assert '\n  "documents": {\n' in text and text.endswith("}\n")
    documents = json.loads(text)["documents"]
    assert documents["docs/a.md"] == entry(output="a.jsonl")
    reloaded, note = Manifest.load(out)
    assert note is None and reloaded.unchanged("docs/z.md", entry(output="z.jsonl"), {"z.jsonl"})


def test_a_run_that_skipped_everything_does_not_rewrite_the_manifest(out: OutDir) -> None:
    manifest, _ = Manifest.load(out)
    manifest.record("docs/a.md", entry())
    manifest.compact()
    before = out.modified(MANIFEST)
    time.sleep(1.1)  # S3 times have one-second resolution
    again, _ = Manifest.load(out)
    again.compact()
    assert out.modified(MANIFEST) == before


def test_a_killed_runs_journal_is_overlaid_on_the_single_file(out: OutDir) -> None:
    first, _ = Manifest.load(out)
    first.record("docs/a.md", entry(output="a.jsonl", model="old"))
    first.record("docs/b.md", entry(output="b.jsonl"))
    first.compact()
    killed, _ = Manifest.load(out)  # records two segments, then dies before compacting
    killed.record("docs/a.md", entry(output="a.jsonl", model="new"))
    killed.record("docs/c.md", entry(output="c.jsonl"))

    rerun, note = Manifest.load(out)
    assert note is None
    assert sorted(rerun.entries) == ["docs/a.md", "docs/b.md", "docs/c.md"]
    assert rerun.entries["docs/a.md"]["model"] == "new"  # the journal is newer
    assert rerun.unchanged("docs/c.md", entry(output="c.jsonl"), {"c.jsonl"})
    rerun.compact()
    assert objects(out) == [MANIFEST_INDEX, MANIFEST]  # the single file and its index
    assert json.loads(out.read(MANIFEST) or b"")["documents"]["docs/a.md"]["model"] == "new"


def test_a_single_file_manifest_from_the_reference_tool_is_read(out: OutDir) -> None:
    old = {"sha256": "s", "model": "m", "prompt_version": 101, "context": "c", "output": "a.jsonl"}
    out.write(MANIFEST, json.dumps({"documents": {"z.md": old, "a.md": old}}).encode())
    manifest, note = Manifest.load(out)
    assert note is None and manifest.unchanged("a.md", entry(), {"a.jsonl"})


def test_a_journal_entry_older_than_the_single_file_is_not_overlaid(out: OutDir) -> None:
    stale, _ = Manifest.load(out)
    stale.record("a.md", entry(model="journal"))  # a killed run's entry...
    time.sleep(1.1)
    reference = {"documents": {"a.md": entry(model="reference")}}  # ...then the reference ran
    out.write(MANIFEST, json.dumps(reference).encode())
    manifest, note = Manifest.load(out)
    assert note is None and manifest.entries["a.md"]["model"] == "reference"
    manifest.compact()  # the stale entry is cleared with the next compaction
    assert objects(out) == [MANIFEST_INDEX, MANIFEST]  # the single file and its index


def test_an_unreadable_single_file_discards_the_journal_too(out: OutDir) -> None:
    killed, _ = Manifest.load(out)
    killed.record("a.md", entry())
    out.write(MANIFEST, b"{ torn")
    manifest, note = Manifest.load(out)
    assert manifest.entries == {}
    assert note is not None and "every segment re-extracts" in note
    manifest.record("b.md", entry())
    manifest.compact()
    assert objects(out) == [MANIFEST_INDEX, MANIFEST]  # the single file and its index
    assert list(json.loads(out.read(MANIFEST) or b"")["documents"]) == ["b.md"]


def test_compaction_does_not_fetch_the_entries_this_run_recorded_again(
    out: OutDir, monkeypatch: pytest.MonkeyPatch
) -> None:
    manifest, _ = Manifest.load(out)
    manifest.record("docs/a.md", entry(output="a.jsonl"))
    other, _ = Manifest.load(out)  # a run that took an expired lease over, meanwhile
    other.record("docs/b.md", entry(output="b.jsonl"))
    fetched: list[str] = []
    read_many = OutDir.read_many

    def counted(self: OutDir, names: list[str]) -> dict[str, bytes]:
        fetched.extend(names)
        return read_many(self, names)

    monkeypatch.setattr(OutDir, "read_many", counted)
    manifest.compact()
    assert fetched == [journal_name("docs/b.md")]  # only the entry this run does not hold
    assert objects(out) == [MANIFEST_INDEX, MANIFEST]
    assert sorted(json.loads(out.read(MANIFEST) or b"")["documents"]) == ["docs/a.md", "docs/b.md"]


def test_the_journal_works_the_same_on_a_local_disk(tmp_path: Any) -> None:
    out = OutDir(str(tmp_path))
    manifest, _ = Manifest.load(out)
    manifest.record("a.md", entry())
    [log] = (tmp_path / MANIFEST_JOURNAL).iterdir()  # a log of this process's (ADR 0044)
    assert log.suffix == ".jsonl"
    assert not (tmp_path / MANIFEST).exists()
    assert Manifest.load(out)[0].entries == {"a.md": entry()}
    manifest.compact()
    assert sorted(p.name for p in tmp_path.iterdir()) == [MANIFEST_INDEX, MANIFEST]  # no journal
    assert not (tmp_path / MANIFEST_JOURNAL).exists()


# --- checkpoints -----------------------------------------------------------------------


def test_a_checkpoint_round_trips_on_s3(out: OutDir) -> None:
    checkpoint = Checkpoint(out, "s3://docs/a.md", {"sha256": "x"})
    checkpoint.save("p1", {"chunk_index": 0, "output": {}})
    checkpoint.save_split("p2", 512)
    again = Checkpoint(out, "s3://docs/a.md", {"sha256": "x"})
    assert again.load() is None and list(again.units) == ["p1"] and again.splits == {"p2": 512}
    assert count_reusable(out, "s3://docs/a.md", {"sha256": "x"}, ["p1", "p3"]) == 1
    other = Checkpoint(out, "s3://docs/a.md", {"sha256": "y"})
    assert "written under different settings — 1 unit(s) re-extract" in (other.load() or "")
    again.delete()
    assert objects(out) == []


# --- the attempts log and the sidecar ---------------------------------------------------


def test_every_attempts_record_is_in_the_object_before_write_returns(out: OutDir) -> None:
    log = AttemptsLog(out, ".extract-trace/a.attempts.jsonl")
    log.open(fresh=True)
    log.write_many([{"type": "segment", "resumed": False}, {"type": "settings"}])
    for seq in range(1, 4):
        log.write({"type": "attempt", "attempt_seq": seq})
        # What a SIGKILL right now would leave: every record written so far.
        on_store = records(out.read(log.name))
        assert [r["type"] for r in on_store] == ["segment", "settings"] + ["attempt"] * seq
    log.close()
    assert log.opened and objects(out) == [log.name]


def test_a_resume_appends_to_the_log_and_a_fresh_start_truncates_it(out: OutDir) -> None:
    name = ".extract-trace/a.attempts.jsonl"
    first = AttemptsLog(out, name)
    first.open(fresh=True)
    first.write({"type": "segment", "resumed": False})
    first.close()
    resumed = AttemptsLog(out, name)
    resumed.open(fresh=False)
    resumed.write({"type": "segment", "resumed": True})
    resumed.close()
    assert [r["resumed"] for r in records(out.read(name))] == [False, True]
    fresh = AttemptsLog(out, name)
    fresh.open(fresh=True)
    fresh.close()  # truncated even with nothing written
    assert out.read(name) == b""


def test_concurrent_records_share_puts_and_each_is_stored_when_log_returns(
    out: OutDir, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorder = StoreRecorder(
        out, "a.md", journal=Journal(out), trace_attempts=True, sidecar=None, sidecar_path=None
    )
    name = f"{TRACE}/{attempts_name('a.md')}"
    puts: list[int] = []
    write_many = AttemptsLog.write_many

    def counted(log: AttemptsLog, batch: Iterable[dict[str, Any]]) -> None:
        batch = list(batch)
        puts.append(len(batch))
        write_many(log, batch)

    monkeypatch.setattr(AttemptsLog, "write_many", counted)

    async def piece(seq: int) -> None:
        await recorder.log({"type": "attempt", "attempt_seq": seq})
        assert {"type": "attempt", "attempt_seq": seq} in records(out.read(name))

    async def segment() -> None:
        await recorder.begin([{"type": "segment"}, {"type": "settings"}], fresh=True)
        await asyncio.gather(*(piece(seq) for seq in range(1, 21)))

    asyncio.run(segment())
    recorder.close()
    assert recorder.attempts_log_exists()
    stored = records(out.read(name))
    assert len(stored) == 22 and sum(puts) == 22
    assert len(puts) < 10, puts  # group commits, not one PUT per record


def test_the_sidecar_is_one_object_with_every_record(s3_env: S3) -> None:
    url = s3_env.prefix("diag") + "/diagnostics.jsonl"
    sidecar = Sidecar(url)
    sidecar.write([{"type": "run", "run_id": "r"}])
    sidecar.write([{"type": "attempt", "attempt_seq": 1}, {"type": "attempt", "attempt_seq": 2}])
    sidecar.close()
    with fsspec.open(url, "rb") as handle:
        assert [r["type"] for r in records(handle.read())] == ["run", "attempt", "attempt"]


# --- the lease -------------------------------------------------------------------------


def lines() -> tuple[list[str], Any]:
    said: list[str] = []
    return said, said.append


def die(lock: LeaseLock) -> None:
    """What a SIGKILL does to a holder: its heartbeat stops; the lock object stays."""
    lock._stop.set()
    assert lock._thread is not None
    lock._thread.join()


def test_lock_for_an_object_store_is_a_lease(out: OutDir) -> None:
    lock = lock_for(out, print, 30)
    assert isinstance(lock, LeaseLock) and lock.seconds == 30


def test_a_live_lease_refuses_a_second_run_naming_the_holder(out: OutDir) -> None:
    said, say = lines()
    with LeaseLock(out, say, seconds=30) as holder:
        lease = Lease.decode(out.read(LOCK) or b"")
        assert lease is not None and lease.token == holder.token
        assert (lease.pid, lease.host) == (os.getpid(), socket.gethostname())
        assert lease.expires - lease.heartbeat == 30
        with pytest.raises(StartupError) as refused:
            LeaseLock(out, say, seconds=30).acquire()
    message = str(refused.value)
    assert f"is held by another taguru process (pid {os.getpid()} on " in message
    assert "expires in 30 s" in message or "expires in 29 s" in message
    assert said == []


def test_release_deletes_the_lease(out: OutDir) -> None:
    with LeaseLock(out, print, seconds=30):
        assert out.exists(LOCK)
    assert not out.exists(LOCK)
    with LeaseLock(out, print, seconds=30):  # free again at once
        pass


def test_a_dead_holders_lease_expires_and_is_taken_over_with_a_line(out: OutDir) -> None:
    said, say = lines()
    dead = LeaseLock(out, say, seconds=1)
    dead.acquire()
    die(dead)
    with pytest.raises(StartupError, match="held by another"):
        LeaseLock(out, say, seconds=1).acquire()  # not expired yet
    time.sleep(1.2)
    with LeaseLock(out, say, seconds=30) as taker:
        lease = Lease.decode(out.read(LOCK) or b"")
        assert lease is not None and lease.token == taker.token
    assert len(said) == 1
    assert said[0].startswith(f"taguru: extract: {out.url}: the lease of pid {os.getpid()} on ")
    assert " expired at 20" in said[0] and said[0].endswith("Z) — taking it over")


def test_the_heartbeat_keeps_a_short_lease_alive(out: OutDir) -> None:
    with LeaseLock(out, print, seconds=1):
        first = Lease.decode(out.read(LOCK) or b"")
        time.sleep(2.5)  # more than two lease lengths
        with pytest.raises(StartupError, match="held by another"):
            LeaseLock(out, print, seconds=1).acquire()
        renewed = Lease.decode(out.read(LOCK) or b"")
    assert first is not None and renewed is not None and renewed.expires > first.expires + 1


def test_a_holder_that_finds_its_lease_taken_says_so_and_stops(out: OutDir) -> None:
    said, say = lines()
    stopped = threading.Event()
    holder = LeaseLock(out, say, seconds=1, on_lost=stopped.set)
    holder.acquire()
    thief = Lease("elsewhere", 4242, "f" * 16, time.time(), time.time() + 60)
    out.write(LOCK, thief.encode())
    assert stopped.wait(5)
    holder.release()
    assert holder.lost and said == [
        f"taguru: extract: lost the lease on {out.url} to pid 4242 on elsewhere — stopping "
        "this run; chunk checkpoints are kept"
    ]
    assert Lease.decode(out.read(LOCK) or b"") == thief  # a lost lease is not deleted


def test_of_two_runs_taking_over_one_expired_lease_exactly_one_wins(out: OutDir) -> None:
    store = S3LeaseStore(out)
    store.create(Lease("h", 1, "dead", 0.0, 1.0).encode())
    seen = store.read()
    assert seen is not None and seen.version
    won = store.replace(Lease("h", 2, "first", 5.0, 65.0).encode(), seen)
    with pytest.raises(Raced):
        store.replace(Lease("h", 3, "second", 5.0, 65.0).encode(), seen)
    with pytest.raises(Raced):
        store.create(b"{}")  # create only if absent
    with pytest.raises(Raced):
        store.delete(seen)  # an old version is not deleted
    store.delete(won)
    assert store.read() is None


def test_without_conditional_writes_the_lease_reads_its_write_back(tmp_path: Any) -> None:
    out = OutDir(f"memory://{tmp_path.name}/out")
    said, say = lines()
    dead = LeaseLock(out, say, seconds=0.5, store=ReadBackLeaseStore(out, settle=0.01))
    dead.acquire()
    die(dead)
    with pytest.raises(StartupError, match="held by another"):
        LeaseLock(out, say, seconds=60, store=ReadBackLeaseStore(out, settle=0.01)).acquire()
    time.sleep(0.6)
    with LeaseLock(out, say, seconds=30, store=ReadBackLeaseStore(out, settle=0.01)):
        assert len(said) == 1 and "taking it over" in said[0]
    assert out.read(LOCK) is None


def test_every_write_is_fenced_by_the_lease_once_lost_or_about_to_lapse(out: OutDir) -> None:
    now = [1000.0]
    deadlines: list[float] = []
    holder = LeaseLock(out, print, seconds=8, clock=lambda: now[0], on_lost=lambda: None, grace=0.2)
    holder.acquire()
    die(holder)  # frozen: no heartbeat renews it
    holder.on_renewed = deadlines.append
    out.fence = holder.check
    out.write("a.jsonl", b"{}\n")  # within the lease
    now[0] += 6.5  # past expiry minus the margin (8 - 2): a frozen holder stops writing
    with pytest.raises(Fenced):
        out.write("b.jsonl", b"{}\n")  # after waiting `grace` for a renewal that never came
    holder.renew()  # the holder woke and nobody took over: its lease is good again
    assert deadlines == [now[0] + 6.0]
    out.write("b.jsonl", b"{}\n")
    holder._lose()  # another run took it over
    assert deadlines[-1] == float("-inf")
    with pytest.raises(Fenced):
        out.delete("a.jsonl")
    holder.release()
    out.fence = None
    assert out.read("a.jsonl") == b"{}\n"  # the fenced delete never happened


def test_a_write_past_the_deadline_waits_for_a_late_renewal(out: OutDir) -> None:
    """A renewal that runs late (a slow PUT on a busy machine) is waited for: the lease
    was never lost, so the write goes ahead — it used to be refused at once, and the
    run then ended with its segments interrupted, yet exited 0."""
    now = [1000.0]
    holder = LeaseLock(out, print, seconds=8, clock=lambda: now[0], on_lost=lambda: None)
    holder.acquire()
    die(holder)
    out.fence = holder.check
    now[0] += 6.5  # past the write deadline, the renewal not in yet
    late = threading.Timer(0.3, holder.renew)
    started = time.monotonic()
    late.start()
    try:
        out.write("b.jsonl", b"{}\n")
    finally:
        late.join()
        holder.release()
        out.fence = None
    assert time.monotonic() - started >= 0.25  # it waited for the renewal
    assert out.read("b.jsonl") == b"{}\n"


def test_the_fence_waits_for_no_renewal_once_lost_or_on_an_event_loop() -> None:
    clock = time.time
    passed = time.time() - 1
    started = time.monotonic()
    assert not wait_for_deadline(lambda: -math.inf, clock, grace=30)  # lost: at once

    async def on_the_loop() -> bool:
        return wait_for_deadline(lambda: passed, clock, grace=30)

    assert not asyncio.run(on_the_loop())  # the loop may be what brings the renewal
    assert time.monotonic() - started < 5
    assert not wait_for_deadline(lambda: passed, clock, grace=0.1)  # waited, none came
    assert wait_for_deadline(lambda: time.time() + 60, clock, grace=0)


def test_compaction_merges_what_another_run_recorded_meanwhile(out: OutDir) -> None:
    stale, _ = Manifest.load(out)  # a run that loaded, then froze
    other, _ = Manifest.load(out)  # the run that took over
    other.record("docs/b.md", entry(output="b.jsonl"))
    other.compact()
    stale.record("docs/a.md", entry(output="a.jsonl"))
    stale.compact()
    documents = json.loads(out.read(MANIFEST) or b"")["documents"]
    assert sorted(documents) == ["docs/a.md", "docs/b.md"]  # nothing of the other run lost
    assert objects(out, MANIFEST_JOURNAL) == []
