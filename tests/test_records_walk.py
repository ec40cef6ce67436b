"""Seed 000's jq walk ("Reading the records"), as Python over the records of a real run.

From one source-file line back to everything that produced it: item → piece
→ the conversation in full → the correction chain → the losses → the
segment's own side (the paragraphs nothing cites). Run over the recorded
fixture (fast) and over a fresh run of the CLI against the simulator (slow),
which also pastes the failure line's inspect command and runs it.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from taguru_ray.contract.items import Association
from taguru_ray.contract.source_file import SourceFile, parse_source_file
from taguru_ray.text.paragraphs import split_paragraphs
from tests.fixtures.records.record import ALPHA, BETA, FAULTS
from tests.support import CONTEXT, REPO, Cli

RECORDS = Path(__file__).parent / "fixtures" / "records"
Record = dict[str, Any]


def jsonl(path: Path) -> list[Record]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def select(records: list[Record], kind: str, **where: Any) -> list[Record]:
    """``jq 'select(.type==kind and .k==v …)'``."""
    return [
        r for r in records if r["type"] == kind and all(r.get(k) == v for k, v in where.items())
    ]


def ref(record: Record) -> tuple[str, int]:
    return record["run_id"], record["attempt_seq"]


def walk(out: Path) -> int:
    """The walk over the written segment whose records hold a correction and a loss."""
    [t] = [p for p in (out / ".extract-trace").glob("*.jsonl") if select(jsonl(p), "loss")]
    trace = jsonl(t)
    log = jsonl(t.with_name(t.name.replace(".jsonl", ".attempts.jsonl")))
    source = parse_source_file((out / t.name).read_bytes())
    # 1. The item: every source-file line has exactly one item record, keyed by its content.
    for fact in source.associations:
        assert len(item_of(trace, fact)) == 1, fact
    loss = select(trace, "loss")[0]
    fact = next(
        a for a in source.associations if item_of(trace, a)[0]["piece_id"] == loss["piece_id"]
    )
    [item] = item_of(trace, fact)
    # 2. The piece the item came from.
    [piece] = select(trace, "piece", piece_id=item["piece_id"])
    # 3. The conversation in full: the accepted completion matches on run_id and attempt_seq.
    conversation = select(log, "attempt", piece_id=piece["piece_id"])
    [accepted] = [a for a in conversation if ref(a) == ref(piece["attempt"])]
    system_turn, user_turn = accepted["messages"][:2]
    [system] = select(log, "system", sha256=system_turn["system_sha256"])
    assert hashlib.sha256(system["content"].encode()).hexdigest() == system["sha256"]
    body = user_turn["content"].split("\n\n", 1)[1]  # the piece, behind its preamble
    assert hashlib.sha256(body.encode()).hexdigest() == piece["piece_id"]
    assert len(body.encode()) == piece["piece_bytes"]
    assert body.startswith(f"[{piece['paragraph_first']}] ")
    assert f"\n\n[{piece['paragraph_last']}] " in f"\n\n{body}"
    answered = json.loads(accepted["answer"])["associations"]
    assert {"subject": fact.subject, "label": fact.label, "object": fact.object}.items() <= next(
        a for a in answered if a["subject"] == fact.subject and a["object"] == fact.object
    ).items()
    # 4. The correction chain: flagged on the target, asked in the last turn, adopted by the piece.
    by_id = {ref(a): a for a in select(log, "attempt")}
    corrective = [a for a in conversation if "corrects" in a]
    assert accepted in corrective
    for attempt in corrective:
        target = by_id[ref(attempt["corrects"])]
        flagged = target["validation_issues"] or [target["parse_error"]]
        ask = attempt["messages"][-1]
        assert ask["role"] == "user" and all(issue in ask["content"] for issue in flagged)
        assert attempt["messages"][-2] == {"role": "assistant", "content": target["answer"]}
    # 5. The losses: each as the model wrote it, beside the original text it was about.
    paragraphs = split_paragraphs(passage(source))
    for lost in select(trace, "loss", piece_id=piece["piece_id"]):
        writer = by_id[ref(lost["attempt"])]
        assert lost["raw"] == at_path(json.loads(writer["answer"]), lost["path"])
        assert lost["text"] == paragraphs[lost["paragraph"]].text
    # 6. The segment's side: every paragraph once; the uncited ones carry their text.
    records = select(trace, "paragraph")
    assert [r["paragraph"] for r in records] == [p.index for p in paragraphs]
    for record, paragraph in zip(records, paragraphs, strict=True):
        citing = sum(a.paragraph == paragraph.index for a in source.associations)
        assert (record["items"], record["covered"]) == (citing, citing > 0)
        assert record["bytes"] == paragraph.bytes
        assert record.get("text") == (None if citing else paragraph.text)
    assert select(trace, "paragraph", covered=False)
    return len(records)


def item_of(trace: list[Record], fact: Association) -> list[Record]:
    key = {"subject": fact.subject, "label": fact.label, "object": fact.object}
    return select(trace, "item", item="association", **key)


def passage(source: SourceFile) -> str:
    assert source.passage is not None
    return source.passage.text


def at_path(answer: Any, path: str) -> Any:
    """``associations[4]`` (or ``aliases[0]``…) resolved in a parsed answer."""
    for key, index in re.findall(r"(\w+)\[(\d+)\]", path):
        answer = answer[key][int(index)]
    return answer


def test_the_walk_over_the_recorded_run() -> None:
    assert walk(RECORDS / "run-a") > 0  # paragraphs walked; each query asserts inside


@pytest.mark.slow
def test_the_walk_over_a_live_run_and_the_failure_lines_command(cli: Cli, tmp_path: Path) -> None:
    docs, out = tmp_path / "docs", tmp_path / "out"
    docs.mkdir()
    (docs / "alpha.md").write_text(ALPHA)
    (docs / "beta.md").write_text(BETA)
    cli.simulator.set_script(FAULTS)
    result = cli.extract("--context", CONTEXT, "--out", str(out), "--chunk-bytes", "512", str(docs))
    assert result.returncode == 1, result.stderr
    assert walk(out) > 0

    line = next(x for x in result.stderr.splitlines() if f"{docs / 'beta.md'}: chunk 1/1" in x)
    piece = re.search(r": piece ([0-9a-f]{12}) \(", line)
    command = re.search(r" \((taguru-ray inspect .+)\)$", line)
    assert piece and command, line
    argv = shlex.split(command.group(1))
    assert argv[-2:] == ["--piece", piece.group(1)]
    pasted = subprocess.run(
        [sys.executable, "-m", "taguru_ray", *argv[1:]],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )
    assert pasted.returncode == 0, pasted.stderr
    assert f"piece {piece.group(1)}" in pasted.stdout
    assert "--- piece as sent, the user turn" in pasted.stdout
    assert "  2 attempt(s) matched piece " in pasted.stdout
