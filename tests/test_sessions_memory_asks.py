"""The memory card and brief asks are logged (`cli/sessions_memory.py`): one record a
ask in ``STORE/.ledger/memory.jsonl`` — what, about whom, model, tokens, seconds,
state — and the run's summary line counts them."""

from __future__ import annotations

import asyncio
from pathlib import Path

from taguru_ray.cli import main
from taguru_ray.cli.sessions_memory import _Asker
from taguru_ray.contract.completion import Completion, CompletionRequest
from taguru_ray.sessions import ledger
from taguru_ray.sessions.memory import Fact, MemoryStore
from taguru_ray.settings import Settings
from taguru_ray.simulate.answers import answer
from tests.support import CONTEXT, REPO

FIXTURES = REPO / "tests" / "fixtures" / "sessions"
CC = "3f2a9c1e-7b4d-4e8a-9f21-5c6d7e8f9a0b"
FACTS = [Fact(0, "We decided to use Ray for the workers.", "workers", "use", "Ray")]


class Simulated:
    """The simulator's answer, with the usage and time an endpoint reports."""

    def __init__(self, outcome: str = "answer") -> None:
        self.outcome = outcome

    async def complete(self, request: CompletionRequest) -> Completion:
        if self.outcome != "answer":
            return Completion("transport", error="connection refused", elapsed_seconds=0.25)
        return Completion("answer", answer(request.messages), "stop", input_tokens=100,
                          output_tokens=20, total_tokens=120, elapsed_seconds=0.5)  # fmt: skip


def _asked(tmp_path: Path, client: Simulated) -> tuple[Path, str]:
    store = tmp_path / "store"
    assert main(["sessions", "import", str(FIXTURES / "claude-code" / f"{CC}.jsonl"),
                 str(FIXTURES / "codex"), "--store", str(store)]) == 0  # fmt: skip
    settings = Settings.of(paths=(str(store),), out=str(tmp_path / "out"), context=CONTEXT,
                           model="m-1")  # fmt: skip
    with MemoryStore(store) as memory:
        memory.put_facts("claude-code", CC, "project:app", FACTS)
        tally = asyncio.run(_Asker(memory, settings, lambda _: None, store).asks(client))  # type: ignore[arg-type]
    return store, tally.line()


def test_each_card_and_brief_ask_is_logged_with_its_cost(tmp_path: Path) -> None:
    store, line = _asked(tmp_path, Simulated())
    asks = ledger.read_asks(store)
    assert [(a["what"], a["about"], a["state"]) for a in asks] == [
        ("card", f"cc:{CC}", "written"),
        ("brief", "project:app", "written"),
    ]
    for record in asks:
        assert record["model"] == "m-1" and record["seconds"] == 0.5
        assert (record["input_tokens"], record["output_tokens"], record["total_tokens"]) == (
            100, 20, 120,
        )  # fmt: skip
    assert "; 2 ask(s), 240 token(s)" in line


def test_an_ask_with_no_answer_is_logged_and_the_rest_not_asked(tmp_path: Path) -> None:
    store, line = _asked(tmp_path, Simulated("transport"))
    (only,) = ledger.read_asks(store)
    assert (only["what"], only["state"], only["total_tokens"]) == ("card", "transport", None)
    assert "1 card(s) and 0 brief(s) pending; 1 ask(s), 0 token(s)" in line
