"""The lock as a lease on object stores (ADR 0009).

An object store has no flock and no process to watch, so there the lock is a
lease: the lock object names its owner (host, pid, a random token) and carries
a heartbeat time and an expiry. A daemon thread renews it every quarter of the
lease; a driver that dies stops renewing, and once the expiry passes the next
run takes the lease over, saying whose lease expired when. A live lease
refuses the run, naming the holder. Every change is a conditional write where
the store has one (S3: create only if absent, replace or delete only if the
ETag is still the one read), so of two runs racing for an expired lease
exactly one wins; elsewhere a write is read back after a short settle and kept
only if the token is still ours. A holder whose renewal finds another token
has lost the lease: it says so and stops the run (`on_lost`, by default an
interrupt of the main thread).

Fencing (issue 16): a holder frozen past its expiry (SIGSTOP, a paused VM)
wakes to find another run owning --out, and anything it writes then would be
written over the new holder's work. So every write of the run is fenced by
the lease: `check` (the driver's) and the deadline handed to the workers
(`on_renewed`) allow writes only until a quarter of a lease before the last
known expiry — the margin covers clock skew and a write in flight — and never
after the lease was lost. A frozen holder's workers, which do not freeze with
it, stop writing before anyone can take over. A write that finds the deadline
passed waits a while (`grace`) for the renewal to push it on before it is
refused (`wait_for_deadline`): a renewal's PUT, or its push to a worker, can
run late on a busy machine, and a lease that was never lost should not stop
the run. Waiting writes nothing, so it is as safe as refusing: a renewal is a
conditional write, and one that succeeds proves no other run took over.

Its length (over 400 lines) is one protocol's: the lease record, the two
conditional stores and the lock that renews and fences are read together.
"""

from __future__ import annotations

import _thread
import asyncio
import contextlib
import json
import math
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from taguru_ray.contract.names import LOCK
from taguru_ray.errors import MESSAGE_PREFIX, StartupError
from taguru_ray.store.outdir import Fenced, OutDir

# Without a conditional write, how long to wait before reading a written lease
# back: a racing writer's PUT lands within it, and the read-back then sees it.
SETTLE_SECONDS = 1.0
# How often a write held at the fence looks for a renewed deadline, and the least it
# waits for one: a renewal's PUT on an overloaded machine can take seconds.
FENCE_POLL_SECONDS = 0.05
FENCE_GRACE_MIN_SECONDS = 10.0


def fence_grace(seconds: float) -> float:
    """How long a write past the deadline waits for a late renewal: a lease length, and
    never less than FENCE_GRACE_MIN_SECONDS (a short lease's renewals run late first)."""
    return max(seconds, FENCE_GRACE_MIN_SECONDS)


def wait_for_deadline(
    deadline: Callable[[], float], clock: Callable[[], float], grace: float
) -> bool:
    """Whether a write may go ahead: at once while `clock()` is before `deadline()`;
    past it, once a late renewal moves the deadline on, waiting up to `grace` seconds
    for it — and never once the lease is lost (a deadline of -inf). Nothing is written
    while it waits. A write made on an event loop's thread does not wait: the loop
    may be what delivers the renewal (a worker's), and nothing else would run."""
    if clock() < deadline():
        return True
    try:
        asyncio.get_running_loop()
        return False
    except RuntimeError:
        pass  # a writer thread: it may wait
    give_up = time.monotonic() + grace
    while deadline() != -math.inf and time.monotonic() < give_up:
        time.sleep(FENCE_POLL_SECONDS)
        if clock() < deadline():
            return True
    return False


def refusal(out: OutDir, holder: str) -> str:
    return (
        f"output directory {out.url} is held by another taguru process ({holder}) — wait "
        "for it to finish or stop it; one run per --out at a time"
    )


@dataclass(frozen=True)
class Lease:
    """The lock object's content: who holds --out, and until when (epoch seconds)."""

    host: str
    pid: int
    token: str
    heartbeat: float
    expires: float

    def encode(self) -> bytes:
        return json.dumps(asdict(self), separators=(",", ":")).encode("utf-8")

    @classmethod
    def decode(cls, data: bytes) -> Lease | None:
        """The lease in `data`; None for anything else (an unreadable lock is no holder)."""
        try:
            raw = json.loads(data.decode("utf-8"))
            lease = cls(
                str(raw["host"]),
                int(raw["pid"]),
                str(raw["token"]),
                float(raw["heartbeat"]),
                float(raw["expires"]),
            )
        except (ValueError, KeyError, TypeError, AttributeError):
            return None
        return lease

    def holder(self) -> str:
        return f"pid {self.pid} on {self.host}"


@dataclass(frozen=True)
class Seen:
    """The lock object as read: its bytes and the store's version tag (ETag) if it has one."""

    data: bytes
    version: str | None = None


class Raced(Exception):
    """A conditional write lost: the lock object is not what was read any more."""


class LeaseStore(Protocol):
    """The lock object with the conditional operations a lease needs."""

    def read(self) -> Seen | None: ...

    def create(self, data: bytes) -> Seen: ...

    def replace(self, data: bytes, seen: Seen) -> Seen: ...

    def delete(self, seen: Seen) -> None: ...


class S3LeaseStore:
    """S3's conditional requests: If-None-Match on create, If-Match on replace and delete."""

    def __init__(self, out: OutDir) -> None:
        self._fs: Any = out.fs
        self._path = out.path(LOCK)
        self._bucket, self._key, _ = self._fs.split_path(self._path)

    def read(self) -> Seen | None:
        # The ETag first: if the object changes before the GET, the bytes are newer
        # than the tag, and a write conditioned on the tag fails as it should.
        try:
            version = self._fs.info(self._path, refresh=True).get("ETag")
            data = self._fs.cat_file(self._path)
        except FileNotFoundError:
            return None
        return Seen(bytes(data), version)

    def create(self, data: bytes) -> Seen:
        return self._put(data, vanished_is_conflict=False, IfNoneMatch="*")

    def replace(self, data: bytes, seen: Seen) -> Seen:
        if seen.version is None:
            raise Raced("no ETag to condition on")
        return self._put(data, vanished_is_conflict=True, IfMatch=seen.version)

    def delete(self, seen: Seen) -> None:
        condition = {"IfMatch": seen.version} if seen.version else {}
        try:
            self._fs.call_s3("delete_object", Bucket=self._bucket, Key=self._key, **condition)
        except OSError as error:
            if _conflict(error, vanished_is_conflict=True):
                raise Raced(str(error)) from None
            raise
        finally:
            self._fs.invalidate_cache(self._path)

    def _put(self, data: bytes, *, vanished_is_conflict: bool, **condition: str) -> Seen:
        try:
            response = self._fs.call_s3(
                "put_object", Bucket=self._bucket, Key=self._key, Body=data, **condition
            )
        except OSError as error:
            if _conflict(error, vanished_is_conflict=vanished_is_conflict):
                raise Raced(str(error)) from None
            raise
        finally:
            self._fs.invalidate_cache(self._path)
        return Seen(data, response.get("ETag"))


def _conflict(error: OSError, *, vanished_is_conflict: bool) -> bool:
    """A conditional request refused because the object changed under it.

    With `vanished_is_conflict` (an If-Match on an object since deleted) a
    missing key counts too; a missing bucket never does.
    """
    response = getattr(error.__cause__, "response", None)
    code = response.get("Error", {}).get("Code") if isinstance(response, dict) else None
    if code in ("PreconditionFailed", "ConditionalRequestConflict", "412"):
        return True
    if isinstance(error, FileExistsError):
        return True
    return vanished_is_conflict and code in ("NoSuchKey", "404")


class ReadBackLeaseStore:
    """Any other store: write whole, wait `settle` seconds, read back, keep it only if ours.

    Best effort — a writer slower than the settle can still overwrite a lease
    that was read back as ours; the holder's next renewal then finds the
    other token and stops its run.
    """

    def __init__(self, out: OutDir, settle: float = SETTLE_SECONDS) -> None:
        self._out = out
        self._settle = settle

    def read(self) -> Seen | None:
        data = self._out.read(LOCK)
        return None if data is None else Seen(data)

    def create(self, data: bytes) -> Seen:
        if self.read() is not None:
            raise Raced("the lock object appeared")
        return self._write(data)

    def replace(self, data: bytes, seen: Seen) -> Seen:
        current = self.read()
        if current is None or current.data != seen.data:
            raise Raced("the lock object changed")
        return self._write(data)

    def delete(self, seen: Seen) -> None:
        current = self.read()
        if current is not None and current.data != seen.data:
            raise Raced("the lock object changed")
        self._out.delete(LOCK)

    def _write(self, data: bytes) -> Seen:
        self._out.write(LOCK, data)
        time.sleep(self._settle)
        back = self.read()
        if back is None or back.data != data:
            raise Raced("another writer replaced the lock object")
        return back


def lease_store(out: OutDir) -> LeaseStore:
    """The conditional store --out's backend allows."""
    try:
        from s3fs import S3FileSystem
    except ImportError:  # pragma: no cover - s3fs is a dependency
        return ReadBackLeaseStore(out)
    if isinstance(out.fs, S3FileSystem):
        return S3LeaseStore(out)
    return ReadBackLeaseStore(out)


def _utc(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class LeaseLock:
    """The lease on an object-store --out, held while the `with` block runs.

    `seconds` is the lease length (renewed every quarter of it); `say` prints
    a line to stderr; `on_lost` runs once if another run takes the lease over
    while this one still holds it; `clock` gives epoch seconds; `grace` is how
    long a write past the deadline waits for a late renewal (`fence_grace`
    unless given).
    """

    def __init__(
        self,
        out: OutDir,
        say: Callable[[str], None],
        *,
        seconds: float,
        store: LeaseStore | None = None,
        on_lost: Callable[[], None] = _thread.interrupt_main,
        clock: Callable[[], float] = time.time,
        grace: float | None = None,
    ) -> None:
        self._out = out
        self._say = say
        self.seconds = seconds
        self.grace = fence_grace(seconds) if grace is None else grace
        self._store = store if store is not None else lease_store(out)
        self._on_lost = on_lost
        self._clock = clock
        self.token = secrets.token_hex(8)
        self._seen: Seen | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.lost = False
        self.valid_until = 0.0  # the expiry of the lease as last written (epoch seconds)
        # Told each new write deadline (epoch seconds): how the workers are fenced.
        self.on_renewed: Callable[[float], None] | None = None
        # Held while `on_renewed` runs, so `detach` returns only once no call is under way.
        self._telling = threading.Lock()

    @property
    def margin(self) -> float:
        """How long before the known expiry writes stop: clock skew and a write in flight."""
        return self.seconds / 4

    @property
    def write_deadline(self) -> float:
        return -math.inf if self.lost else self.valid_until - self.margin

    def check(self) -> None:
        """The driver's fence: raise `Fenced` once the lease is lost, or about to lapse
        and not renewed within `grace` (`wait_for_deadline`)."""
        if self.lost or not wait_for_deadline(lambda: self.write_deadline, self._clock, self.grace):
            raise Fenced(self._out.url)

    def _lease(self, now: float) -> Lease:
        return Lease(socket.gethostname(), os.getpid(), self.token, now, now + self.seconds)

    def acquire(self) -> None:
        """Take the lease, or raise StartupError naming the live holder (or the store's error)."""
        try:
            self._take()
        except OSError as error:
            raise StartupError(
                f"--out {self._out.url}: cannot take its lock {LOCK} ({error})"
            ) from None

    def _take(self) -> None:
        for _ in range(5):
            seen = self._store.read()
            now = self._clock()
            mine = self._lease(now)
            try:
                if seen is None:
                    self._seen = self._store.create(mine.encode())
                else:
                    held = Lease.decode(seen.data)
                    if held is not None and held.expires > now:
                        raise StartupError(refusal(self._out, _live(held, now)))
                    self._seen = self._store.replace(mine.encode(), seen)
                    self._say(_takeover(self._out, held))
            except Raced:
                continue
            self.valid_until = mine.expires
            self._thread = threading.Thread(target=self._beat, name="taguru-ray-lease", daemon=True)
            self._thread.start()
            return
        raise StartupError(
            f"output directory {self._out.url}: another taguru-ray process keeps changing its "
            "lock while this one starts — one run per --out at a time; try again"
        )

    def renew(self) -> None:
        """Push the expiry out by a lease length; `Raced` → the lease is someone else's."""
        if self._seen is None:
            raise RuntimeError("renewing a lease that was never taken")
        now = self._clock()
        lease = self._lease(now)
        try:
            self._seen = self._store.replace(lease.encode(), self._seen)
        except Raced:
            current = self._store.read()
            held = None if current is None else Lease.decode(current.data)
            if current is None or held is None or held.token != self.token:
                raise
            # Ours after all (a retried PUT that had landed): adopt its version and go on.
            self._seen = current
            lease = held
        self.valid_until = lease.expires
        self._tell(self.write_deadline)

    def _tell(self, deadline: float) -> None:
        with self._telling:
            if self.on_renewed is not None:
                self.on_renewed(deadline)

    def detach(self) -> None:
        """Stop telling `on_renewed`: the run is over and what it told (Ray's actors) is
        going away. The lease itself is still renewed until `release`. Once this returns,
        no call is under way — one after Ray's shutdown would start a new Ray."""
        with self._telling:
            self.on_renewed = None

    def _beat(self) -> None:
        while not self._stop.wait(self.seconds / 4):
            try:
                self.renew()
            except Raced:
                self._lose()
                return
            except OSError:
                continue  # a transient store error: the lease has three more beats of slack

    def _lose(self) -> None:
        try:
            current = self._store.read()
        except OSError:
            current = None
        held = None if current is None else Lease.decode(current.data)
        holder = held.holder() if held is not None else "a process that removed the lock"
        self.lost = True
        with contextlib.suppress(Exception):  # the workers' deadline: now past
            self._tell(-math.inf)
        self._say(
            f"{MESSAGE_PREFIX}lost the lease on {self._out.url} to {holder} — stopping this "
            "run; chunk checkpoints are kept"
        )
        self._on_lost()

    def release(self) -> None:
        """Stop renewing and delete the lock object if it is still ours."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.seconds)
            self._thread = None
        seen, self._seen = self._seen, None
        if seen is None or self.lost:
            return
        with contextlib.suppress(OSError, Raced):
            try:
                self._store.delete(seen)
            except Raced:
                current = self._store.read()
                held = None if current is None else Lease.decode(current.data)
                if current is not None and held is not None and held.token == self.token:
                    self._store.delete(current)

    def __enter__(self) -> LeaseLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _live(held: Lease, now: float) -> str:
    return (
        f"{held.holder()}, lease renewed {max(0.0, now - held.heartbeat):.0f} s ago, "
        f"expires in {max(0.0, held.expires - now):.0f} s"
    )


def _takeover(out: OutDir, held: Lease | None) -> str:
    if held is None:
        return f"{MESSAGE_PREFIX}{out.url}: replacing an unreadable lock object with a lease"
    return (
        f"{MESSAGE_PREFIX}{out.url}: the lease of {held.holder()} expired at "
        f"{_utc(held.expires)} (last heartbeat {_utc(held.heartbeat)}) — taking it over"
    )
