"""The whole session pipeline, as a user runs it (issue 38, acceptance): a Claude Code
session, a Codex rollout and an OpenAI chat log, each with Japanese and English turns,
through `sessions import` and `sessions extract` with the default stages against the
simulator, on Ray. Every written fact traces to its turn's seq and a quote verbatim in
that turn (the trace's P14 provenance: seq, span, quote), the association in the source
file sits in the paragraph holding that quote, the out folder imports whole (`verify`),
and after the run recall answers with briefs that start with their handle and each
session has a memory card citing its seqs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from taguru_ray.cli import main
from taguru_ray.contract.names import TRACE, output_name
from taguru_ray.contract.source_file import parse_source_file
from taguru_ray.sessions.checks import collapse
from taguru_ray.sessions.index import SessionStore
from taguru_ray.sessions.memory import MemoryStore
from taguru_ray.text.paragraphs import split_paragraphs
from tests.support import REPO, Cli, assert_imports_whole, verify
from tests.test_sessions_extract_cli import extract

PIPELINE = REPO / "tests" / "fixtures" / "sessions-pipeline"
CHAT_ID = "replica-lag"
HANDLES = {
    "claude-code": "cc:6b1e0c2d-9a4f-4c3b-8e7d-1f2a3b4c5d6e",
    "codex": "cx:019a2b3c-4d5e-7f60-8a9b-0c1d2e3f4a5b",
    "openai-chat": f"oc:{CHAT_ID}",
}


def has_japanese(text: str) -> bool:
    return any("\u3040" <= ch <= "\u30ff" or "\u4e00" <= ch <= "\u9fff" for ch in text)


@pytest.fixture
def store(tmp_path: Path) -> Path:
    folder = tmp_path / "store"
    assert main(["sessions", "import", str(PIPELINE / "claude-code"), str(PIPELINE / "codex"),
                 "--store", str(folder)]) == 0  # fmt: skip
    assert main(["sessions", "import", str(PIPELINE / "openai-chat" / f"{CHAT_ID}.json"),
                 "--id", CHAT_ID, "--started-at", "2025-11-05T09:00:00Z",
                 "--store", str(folder)]) == 0  # fmt: skip
    return folder


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str]]:
    code = main(["sessions", *argv])
    return code, capsys.readouterr().out.splitlines()


def test_three_agents_japanese_and_english_every_fact_traces_to_a_verbatim_quote(
    cli: Cli, store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    done = extract(cli, store, out)  # the default stages: the seed's main line
    assert done.returncode == 0, done.stdout + done.stderr
    assert_imports_whole(str(out))
    checked = verify(out)
    assert checked.returncode == 0, checked.stdout + checked.stderr

    with SessionStore(store) as sessions:
        rows = {row.agent: row for row in sessions.sessions()}
        assert {agent: row.handle for agent, row in rows.items()} == HANDLES
        languages: set[bool] = set()
        for agent, row in rows.items():
            session = sessions.session(row.agent, row.session_id)
            turns = {event.seq: event.text for event in session.events}
            spoken = [t for e in session.events if e.kind.endswith("_text") for t in [e.text]]
            assert any(map(has_japanese, spoken)) and not all(map(has_japanese, spoken)), agent
            facts = check_session(out, session.source, turns)
            assert facts, f"{agent}: no fact written"
            assert any(has_japanese(turns[f["seq"]]) for f in facts), agent
            languages |= {has_japanese(turns[f["seq"]]) for f in facts}
        assert languages == {True, False}  # facts from Japanese turns and English ones

    # recall: briefs first, each line starting with its handle; a brief's facts are its turn's.
    code, printed = run(capsys, "recall", "Rounding Module", "--store", str(store))
    assert code == 0 and printed
    assert all(line.startswith(f"{HANDLES['codex']}#") for line in printed), printed
    assert not any(line.endswith("  pending") for line in printed)
    for query in ("Billing Worker", "Morning Export", "Rounding Module"):
        _, printed = run(capsys, "recall", query, "--json", "--store", str(store))
        hits = json.loads(printed[0])["hits"]
        assert hits and hits[0]["state"] == "brief", (query, hits)
        for hit in hits:
            assert hit["handle"].startswith(tuple(HANDLES.values()))
            assert all(hit["handle"].endswith(f"#{fact['seq']}") for fact in hit["facts"])
    # Memory cards: one per session, each line citing a seq a written fact came from.
    with SessionStore(store) as sessions, MemoryStore(store) as memory:
        for row in sessions.sessions():
            card = memory.card(row.agent, row.session_id)
            facts = memory.facts(row.agent, row.session_id)
            assert card is not None and card.lines and not card.pending, row.handle
            assert {line.seq for line in card.lines} <= {fact.seq for fact in facts}
    code, printed = run(capsys, "show", HANDLES["claude-code"], "--store", str(store))
    assert code == 0 and printed[0].startswith(f"card {HANDLES['claude-code']}  ")
    card = printed[1 : printed.index("")]
    assert card and all(line.startswith(f"{HANDLES['claude-code']}#") for line in card)


def check_session(out: Path, source: str, turns: dict[int, str]) -> list[dict[str, Any]]:
    """The session's written facts, each checked against its turn: the trace's fact line
    names the seq, a quote verbatim in that turn and the span where it stands; the source
    file's association at the same place states the same triple, in the paragraph of the
    passage that holds the quote."""
    lines = (out / TRACE / output_name(source)).read_text(encoding="utf-8").splitlines()
    trace = [json.loads(line) for line in lines]
    facts = [line for line in trace if line["type"] == "fact"]
    parsed = parse_source_file((out / output_name(source)).read_bytes(), name=source)
    assert parsed.passage is not None
    paragraphs = [p.text for p in split_paragraphs(parsed.passage.text)]
    assert len(parsed.associations) == len(facts), source
    for fact, association in zip(facts, parsed.associations, strict=True):
        seq, quote = fact["seq"], fact["quote"]
        assert fact["source"] == source and seq in turns, fact
        text = turns[seq]
        assert quote and collapse(quote) in collapse(text), fact
        start, end = fact["span"]
        assert collapse(text[start:end]) == collapse(quote), fact
        assert fact["speaker_id"] and fact["model"] and fact["prompt_sha256"], fact
        written = fact.get("written", fact["value"])
        assert (association.subject, association.label, association.object) == (
            fact["subject"], fact["predicate"], written)  # fmt: skip
        paragraph = paragraphs[association.paragraph]
        assert collapse(quote) in collapse(paragraph), (fact, paragraph)
    return facts
