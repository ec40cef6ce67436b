"""Relative paths made absolute before a run joins a Ray cluster (--address).

With --address the workers and the actors beside the driver are processes the
cluster started, in a working directory of the cluster's choosing: a relative
`--out out/` there is not the `out/` the user sees. So every local relative
path a setting names is made absolute here, in the driver, before anything is
sent — except the input paths: the driver alone reads them, and each is its
segment's source id as typed (CONTRACT.md section 1), which a rewrite would
change (a second source for every file, ADR 0061). URLs (s3://, file://, a
chained fsspec URL) are left as written.

A head on another machine cannot write to this machine's disk at all; that is
said in one line, once, when --out is a local path.
"""

from __future__ import annotations

import os
import socket
from typing import Any

from taguru_ray.contract.settings import values
from taguru_ray.contract.settings.model import declarations
from taguru_ray.settings import Settings

AS_TYPED = frozenset({"paths"})  # the input paths: source ids, read by the driver


def is_local(value: str) -> bool:
    """A path on this machine's disk, not an fsspec URL (`s3://…`, `simplecache::…`)."""
    return "://" not in value and "::" not in value


def for_the_cluster(settings: Settings, remote_host: str | None) -> tuple[Settings, list[str]]:
    """`settings` with its local relative paths absolute when it joins a cluster, and the
    lines to say: one when the head (`remote_host`, None for this machine) is elsewhere
    and --out is a local path."""
    if settings.scale.address is None:
        return settings, []
    changed: dict[str, dict[str, Any]] = {}
    for declared in declarations():
        if declared.knob.parse is not values.location or declared.name in AS_TYPED:
            continue
        group = getattr(settings, declared.group)
        value = getattr(group, declared.name)
        if isinstance(value, str) and value and is_local(value) and not os.path.isabs(value):
            changed.setdefault(declared.group, {})[declared.name] = os.path.abspath(value)
    groups = {
        name: getattr(settings, name).model_copy(update=update) for name, update in changed.items()
    }
    settled = settings.model_copy(update=groups) if groups else settings
    lines = []
    out = settled.source.out
    if remote_host is not None and is_local(out):
        lines.append(
            f"--out {out} is a folder on this machine, and the Ray head at {remote_host} is "
            "not: its workers write there on their own disks — give a folder every node "
            "shares, or an s3:// URL"
        )
    return settled, lines


def remote_head(address: str | None) -> str | None:
    """The head's host when --address names another machine; None for this one (or none).

    An address is this machine's when a socket can be bound to it: loopback, or one of
    this host's own interfaces (a cluster started here with `ray start --head`)."""
    if address is None:
        return None
    target = address.removeprefix("ray://")
    host = target.rpartition(":")[0].strip("[]") if ":" in target else target
    if host in ("", "auto", "local", "localhost"):
        return None
    try:
        for family, kind, proto, _, where in socket.getaddrinfo(host, None):
            with socket.socket(family, kind, proto) as probe:
                probe.bind((where[0], 0))
            return None
    except OSError:
        return host
    return host
