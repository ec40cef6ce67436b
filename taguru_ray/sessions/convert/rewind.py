"""Which Claude Code lines lie on a rewound branch, told apart cheaply from ``parentUuid``.

A Claude Code file is a DAG appended to in time order. Rewinding (editing an earlier
prompt) writes a new user prompt whose parent is the old prompt's parent, and the
conversation goes on from there; the old prompt and everything under it stay in the
file. So: where two or more *prompts* (user text, not tool results, not meta) share
a parent, the one on the live path — the chain from the file's last main-chain line
back to its root, through a compaction's ``logicalParentUuid`` — is kept; when none
is, the last in file order is. The others and all their descendants are abandoned.
Tool results and assistant lines never start a branch here (parallel tool calls fan
out under one parent without any rewind), and sidechains are left alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Node:
    uuid: str
    parent: str | None
    prompt: bool = False  # a user line holding the user's own text
    sidechain: bool = False


def abandoned(nodes: Sequence[Node]) -> set[str]:
    """The uuids of the lines on rewound branches (empty for an unbranched file)."""
    main = [node for node in nodes if not node.sidechain]
    children: dict[str, list[str]] = {}
    prompts: dict[str, list[str]] = {}
    parent_of: dict[str, str | None] = {}
    for node in main:
        parent_of.setdefault(node.uuid, node.parent)
        if node.parent is not None:
            children.setdefault(node.parent, []).append(node.uuid)
            if node.prompt:
                prompts.setdefault(node.parent, []).append(node.uuid)
    forks = [siblings for siblings in prompts.values() if len(siblings) > 1]
    if not forks:
        return set()
    live = _chain(main[-1].uuid, parent_of)
    roots = [
        uuid
        for siblings in forks
        for uuid in siblings
        if uuid != next((s for s in siblings if s in live), siblings[-1])
    ]
    return _descendants(roots, children)


def _chain(leaf: str, parent_of: dict[str, str | None]) -> set[str]:
    chain: set[str] = set()
    at: str | None = leaf
    while at is not None and at not in chain:
        chain.add(at)
        at = parent_of.get(at)
    return chain


def _descendants(roots: list[str], children: dict[str, list[str]]) -> set[str]:
    found: set[str] = set()
    stack = list(roots)
    while stack:
        uuid = stack.pop()
        if uuid not in found:
            found.add(uuid)
            stack += children.get(uuid, [])
    return found
