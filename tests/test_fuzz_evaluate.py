"""Hostile eval files, --thresholds files and --config files for `evaluate` (issue 37, "fuzz
every reader").

The fixture eval set and a full thresholds file, broken the ways a hand edit or a hostile
file breaks them (lines dropped or swapped for other JSON, a value replaced or removed, an
unknown field, nesting past the stack, bytes cut or spliced), and a KEY=VALUE file of
anything. The server address is a port that refuses connections, so a file that reads
ends at "not reachable" (exit 1) before any network wait; one that does not is a usage
error (exit 2) naming it. Never a traceback; nothing written (--out included).
"""

from __future__ import annotations

import json
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from tests.fuzzing import (
    assert_clean,
    assert_names_one_of,
    broken_value,
    damaged,
    dumps,
    file_bytes,
    mutated_lines,
    run,
    tree,
)

pytestmark = pytest.mark.fuzz

EVAL = Path(__file__).parent / "fixtures" / "evaluate" / "eval.jsonl"
EVAL_LINES = [json.loads(line) for line in EVAL.read_text(encoding="utf-8").splitlines()]
THRESHOLDS = {
    "taguru_evaluate_thresholds": 1,
    "aggregate": {"recall.recall_at_k": {"min": 0.8}, "citations.recall": {"min": 0.9}},
    "cases": {"default": {"recall.recall_at_k": {"min": 0.5}},
              "overrides": {"origin": {"citations.recall": {"min": 0.0}}}},
    "allow_unstable_corpus": False,
}  # fmt: skip


@pytest.fixture(scope="module")
def refusing_port() -> Iterator[int]:
    """A port bound but never listened on: a connection is refused at once."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield held.getsockname()[1]


@st.composite
def eval_bytes(draw: st.DrawFn) -> bytes:
    return draw(damaged(draw(mutated_lines(list(EVAL_LINES))), other=True))


@st.composite
def thresholds_bytes(draw: st.DrawFn) -> bytes:
    document = THRESHOLDS
    for _ in range(draw(st.integers(0, 3))):
        document = draw(broken_value(document))
    return _damaged(draw, dumps(document).encode("utf-8", "surrogatepass"))


def _damaged(draw: st.DrawFn, data: bytes) -> bytes:
    return draw(damaged(data, other=True))


@given(
    eval_data=eval_bytes(),
    thresholds=st.none() | thresholds_bytes(),
    config=st.none() | file_bytes(),
)
def test_evaluate_reads_any_eval_thresholds_and_config_file_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    refusing_port: int, eval_data: bytes, thresholds: bytes | None, config: bytes | None,
) -> None:  # fmt: skip
    for name in ("TAGURU_ADDR", "TAGURU_API_TOKEN", "TAGURU_API_TOKENS", "TAGURU_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    scratch = Path(tempfile.mkdtemp(dir=tmp_path))
    (scratch / "eval.jsonl").write_bytes(eval_data)
    argv = ["evaluate", "--eval", str(scratch / "eval.jsonl"), "--context", "sake",
            "--url", f"http://127.0.0.1:{refusing_port}", "--out", str(scratch / "out.json")]
    inputs = [str(scratch / "eval.jsonl")]
    for flag, data in (("--thresholds", thresholds), ("--config", config)):
        if data is not None:
            (scratch / flag[2:]).write_bytes(data)
            argv += [flag, str(scratch / flag[2:])]
            inputs.append(str(scratch / flag[2:]))
    before = tree(scratch)
    ran = run(capsys, argv)
    event(f"exit {ran.code}")
    assert_clean(ran, codes=(1, 2))
    if ran.code == 2:
        assert_names_one_of(ran, inputs)
    else:
        assert "not reachable" in ran.err, ran
    assert tree(scratch) == before
