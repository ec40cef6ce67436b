"""Segments commit in name order (ADR 0019): whatever the window, the worker count or
the chunk parallelism, a segment is judged against every earlier one, so the out folder
imports whole and its bytes depend on the answers alone."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

import pytest

from taguru_ray.contract.names import output_name
from taguru_ray.contract.source_file import parse_source_file
from tests.support import CONTEXT, Cli, verify

NAMES = ("Alpha", "Beta", "Gamma", "Delta", "Epsilon", "Zeta")
LABELS = ("uses", "feeds", "part of")


def answer(associations: list[tuple[str, str, str]], aliases: list[tuple[str, str]]) -> str:
    return json.dumps(
        {
            "associations": [
                {"subject": s, "label": label, "object": o} for s, label, o in associations
            ],
            "aliases": [{"alias": a, "canonical": c, "kind": "concept"} for a, c in aliases],
        }
    )


def test_an_alias_rewiring_a_name_two_segments_back_is_pruned_at_any_window(
    cli: Cli, tmp_path: Path
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("Alpha uses Beta every day.\n")
    (docs / "m.md").write_text("Delta feeds Epsilon at night.\n")
    (docs / "z.md").write_text("Gamma, which some call Beta, powers Zeta.\n")
    cli.simulator.set_script(
        [
            {"match": "Alpha uses Beta", "answer": answer([("Alpha", "uses", "Beta")], [])},
            {"match": "Delta feeds", "answer": answer([("Delta", "feeds", "Epsilon")], [])},
            {
                "match": "Gamma, which",
                "answer": answer([("Gamma", "powers", "Zeta")], [("Beta", "Gamma")]),
            },
        ]
    )
    out = tmp_path / "out"
    result = cli.extract(
        "--context", CONTEXT, "--out", str(out), "--segment-window", "8", str(docs)
    )
    assert result.returncode == 0, result.stderr
    z = str(docs / "z.md")
    assert (
        f'taguru: extract: {z}: removed: aliases[0]: alias "Beta" already names a concept an '
        "earlier segment or the target context settled on"
    ) in result.stderr
    written = out / output_name(z)
    assert parse_source_file(written.read_bytes()).aliases == []
    checked = verify(out)
    assert checked.returncode == 0, checked.stdout + checked.stderr

    # The rewire put back by hand: import would refuse z.md's file, and verify says so.
    alias = {"alias": "Beta", "canonical": "Gamma", "kind": "concept"}
    with written.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(alias) + "\n")
    checked = verify(out)
    assert checked.returncode == 1
    assert output_name(z) in checked.stdout and '"Beta"' in checked.stdout


def random_corpus(seed: int, docs: Path) -> list[dict[str, Any]]:
    """Segments of three paragraphs (a chunk each at --chunk-bytes 512), every name in
    every paragraph, and a scripted answer per paragraph: random facts, random aliases,
    many of which rewire what an earlier segment settled."""
    rng = random.Random(seed)
    rules = []
    filler = " ".join(NAMES) + ". " + "Words that only pad the paragraph out. " * 8
    for segment in range(6):
        paragraphs = []
        for paragraph in range(3):
            marker = f"Marker s{segment}p{paragraph}"
            paragraphs.append(f"{marker}. {filler}")
            facts = []
            for _ in range(rng.randint(1, 3)):
                subject, obj = rng.sample(NAMES, 2)
                facts.append((subject, rng.choice(LABELS), obj))
            used = sorted({name for s, _, o in facts for name in (s, o)})
            aliases = [
                (rng.choice([n for n in NAMES if n not in used]), rng.choice(used))
                for _ in range(rng.randint(0, 2))
                if len(used) < len(NAMES)
            ]
            rules.append({"match": marker + ".", "answer": answer(facts, aliases)})
        (docs / f"s{segment}.md").write_text("\n\n".join(paragraphs) + "\n")
    return rules


# W ∈ {1, 3, 8, 64} × --parallel ∈ {1, 4} × workers ∈ {1, 3}, pairwise: every pair of
# values of any two knobs meets in some run (8 runs where the full product takes 16); then
# the default window (""), which follows the in-flight ceiling (ADR 0047), and a window
# following --max-inflight 5 ("i5").
PAIRWISE = (
    ("1", "1", "1"),
    ("1", "4", "3"),
    ("3", "1", "3"),
    ("3", "4", "1"),
    ("8", "1", "1"),
    ("8", "4", "3"),
    ("64", "1", "3"),
    ("64", "4", "1"),
    ("", "1", "3"),
    ("i5", "4", "1"),
)


def source_files(out: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(out.glob("*.jsonl"))}


# Every value of each knob at least once: the second corpus's cheaper check.
COVERING = (("1", "1", "1"), ("3", "4", "3"), ("8", "1", "3"), ("64", "4", "1"), ("", "4", "3"))


def window_flags(window: str) -> list[str]:
    """A design's window: W pinned, the default (""), or following --max-inflight ("iN")."""
    if not window:
        return []
    if window.startswith("i"):
        return ["--max-inflight", window[1:]]
    return ["--segment-window", window]


@pytest.mark.parametrize(("seed", "design"), [(7, PAIRWISE), (11, COVERING)])
def test_source_files_are_the_same_bytes_for_every_window_parallelism_and_worker_count(
    cli: Cli, tmp_path: Path, seed: int, design: tuple[tuple[str, str, str], ...]
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    cli.simulator.set_script(random_corpus(seed, docs))
    runs: dict[tuple[str, str, str], dict[str, bytes]] = {}
    rewired = 0
    for window, parallel, workers in design:
        out = tmp_path / f"out-{window}-{parallel}-{workers}"
        result = cli.extract(
            "--context",
            CONTEXT,
            "--out",
            str(out),
            "--chunk-bytes",
            "512",
            "--carryover",
            "0",
            *window_flags(window),
            "--parallel",
            parallel,
            "--workers",
            workers,
            str(docs),
        )
        assert result.returncode == 0, result.stderr
        rewired += result.stderr.count("an alias cannot rewire it")
        runs[(window, parallel, workers)] = source_files(out)  # `cli.extract` verified it
        shutil.rmtree(out / ".extract-trace")  # keep tmp small; the trace holds run ids
    baseline = runs[("1", "1", "1")]
    assert len(baseline) == 6
    assert rewired >= 4, "the corpus should hold aliases that rewire earlier segments' names"
    for knobs, files in runs.items():
        assert files == baseline, f"{knobs} wrote different bytes"
