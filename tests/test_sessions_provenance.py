"""P14 provenance on every written fact (`sessions/provenance.py`): the turn's seq and
sha256, the quote's character span, the turn's time and speaker, the model and the
prompt's digest — all from code, none from the model."""

from __future__ import annotations

import hashlib
from pathlib import Path

from taguru_ray.sessions import prompt
from taguru_ray.sessions.convert import convert
from taguru_ray.sessions.provenance import fact_provenance, prompt_sha256, quote_span

CLAUDE = (
    Path(__file__).parent
    / "fixtures/sessions/claude-code/3f2a9c1e-7b4d-4e8a-9f21-5c6d7e8f9a0b.jsonl"
)


def test_a_quote_span_allows_any_whitespace_run_between_its_words() -> None:
    text = "The deploy\n  script is build-release.sh now."
    assert quote_span("deploy script is", text) == (4, 22)
    assert text[4:22] == "deploy\n  script is"
    assert quote_span("not there", text) is None
    assert quote_span("", text) is None


def test_a_fact_carries_its_turn_span_time_speaker_model_and_prompt_digest() -> None:
    session = convert(CLAUDE.read_bytes(), file=str(CLAUDE))
    turn = next(e for e in session.events if e.kind == "user_text")
    quote = "build-release.sh に変更した"
    line = fact_provenance(session, turn.seq, quote, model="m-1")
    start, end = line["span"]
    assert turn.text[start:end] == quote
    assert line == {
        "source": session.source,
        "seq": turn.seq,
        "quote": quote,
        "span": [start, end],
        "ts_ms": turn.ts_ms,
        "ts_exact": True,
        "speaker_id": "user",
        "turn_sha256": hashlib.sha256(turn.text.encode()).hexdigest(),
        "model": "m-1",
        "prompt_sha256": prompt_sha256(prompt),
    }


def test_the_prompt_digest_changes_with_the_wording() -> None:
    class Wording:
        PROMPT_VERSION = "v1"
        EXTRACT_SYSTEM = "state the facts"

    first = prompt_sha256(Wording)  # type: ignore[arg-type]
    Wording.EXTRACT_SYSTEM = "state the facts, and only those"
    assert prompt_sha256(Wording) != first  # type: ignore[arg-type]
