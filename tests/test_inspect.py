"""``taguru-ray inspect`` on recorded attempts logs (tests/fixtures/records/README.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from taguru_ray.contract.names import inspect_command
from taguru_ray.tools.inspect import Filter, build_report
from taguru_ray.tools.inspect_text import render_text
from taguru_ray.tools.records import read_lines

RECORDS = Path(__file__).parent / "fixtures" / "records"
REPO = Path(__file__).resolve().parents[1]


def log_of(run: str, stem: str) -> Path:
    [path] = (RECORDS / run / ".extract-trace").glob(f"{stem}-*.attempts.jsonl")
    return path


def view(path: Path, filter_: Filter | None = None) -> tuple[dict, str]:
    report = build_report(str(path), read_lines(path.read_bytes()), filter_ or Filter())
    return report.to_json(), render_text(report)


def raw(path: Path, kind: str) -> list[dict]:
    return [r for r in map(json.loads, path.read_text().splitlines()) if r["type"] == kind]


def test_every_completion_is_one_line_in_issue_order_with_its_piece_and_paragraphs() -> None:
    path = log_of("run-a", "docs__alpha.md")
    report, text = view(path)
    assert [a["attempt_seq"] for a in report["attempts"]] == [
        a["attempt_seq"] for a in raw(path, "attempt")
    ]
    first, corrected, second, stage2 = report["attempts"]
    assert (first["chunk_index"], first["chunk_total"]) == (0, 2)
    assert (first["paragraph_first"], first["paragraph_last"]) == (0, 3)
    assert corrected["corrects"]["attempt_seq"] == first["attempt_seq"]
    assert (second["paragraph_first"], second["paragraph_last"]) == (4, 4)
    assert stage2["stage"] == "cross_chunk"
    piece = first["piece_id"][:12]
    line = (
        f"  #{first['attempt_seq']}  chunk 1/2  piece {piece}  paragraphs 0–3 (431 B)  attempt 1/2"
    )
    assert line + "  stop_valid  " in text
    assert f"  corrects #{first['attempt_seq']}" in text
    assert "cross-chunk correction 1/2  stop_valid" in text
    issue = 'associations[0].weight: expected finite non-zero number, got string "strong"'
    assert f"        {issue}\n" in text
    assert "        1 item(s) removed (mechanical validation)\n" in text
    assert "  4 attempt(s): 4 stop_valid · 0 move(s)\n" in text
    assert text.startswith(f"{path}: attempts log for 'docs/alpha.md', run ")


def test_a_failed_segment_ends_with_the_command_that_opens_the_piece_it_never_got_back() -> None:
    path = log_of("run-a", "docs__beta.md")
    report, text = view(path)
    piece = report["attempts"][0]["piece_id"]
    assert {a["state"] for a in report["attempts"]} == {"stop_malformed"}
    assert text.endswith(
        f"  piece {piece[:12]} never reached a valid answer: "
        f"taguru-ray inspect {path} --piece {piece[:12]}\n"
    )


def test_the_ladder_moves_sit_under_the_attempt_they_followed() -> None:
    path = log_of("run-b", "ladder__gamma.md")
    report, text = view(path)
    lines = text.splitlines()
    split = next(i for i, line in enumerate(lines) if line.startswith("      ↳ split"))
    assert lines[split - 1].startswith("        not a JSON object")  # attempt #2's detail
    assert lines[split - 2].startswith("  #2  chunk 1/1  piece ")
    assert "into 2 sub-piece(s) at 512 B — still cut off at max_tokens" in lines[split]
    assert "cap 250 tok" in lines[split + 1]  # a sub-piece restarts at the configured budget
    assert "  6 attempt(s): 4 length_limited, 2 stop_valid · 4 move(s): 3 escalate, 1 split\n" in (
        text
    )
    assert [m["move"] for m in report["moves"]] == ["escalate", "split", "escalate", "escalate"]
    assert report["moves"][1]["after"] == {
        "run_id": report["attempts"][1]["run_id"],
        "attempt_seq": report["attempts"][1]["attempt_seq"],
    }
    # The split parent never answered, but its halves did: nothing is unfinished.
    assert "every piece reached a valid answer; to read one as sent: " in text


def test_a_piece_prefix_prints_the_turn_as_sent_the_corrective_ask_and_the_answer() -> None:
    path = log_of("run-a", "docs__alpha.md")
    [first, corrected, *_] = raw(path, "attempt")
    report, text = view(path, Filter(piece=first["piece_id"][:4]))
    assert report["filter"] == f"piece {first['piece_id'][:4]}" and report["matched"] == 2
    user = first["messages"][1]["content"]
    size = len(user.encode())
    assert (
        f"--- piece as sent, the user turn (#{first['attempt_seq']}, {size} B) ---\n{user}\n"
        in (text)
    )
    assert f"(piece as sent: the same user turn as #{first['attempt_seq']})" in text
    ask = corrected["messages"][-1]["content"]
    assert f"--- corrective ask (#{corrected['attempt_seq']}, " in text and ask.rstrip() in text
    assert f"{corrected['answer']}\n--- end ---\n" in text  # verbatim, unescaped
    assert report["attempts"][1]["corrective_ask"] == ask
    assert report["attempts"][0]["piece_text"] == user


def test_a_paragraph_selects_every_piece_whose_labels_span_it() -> None:
    path = log_of("run-b", "ladder__gamma.md")
    report, _ = view(path, Filter(paragraph=6))
    spans = {(a["paragraph_first"], a["paragraph_last"]) for a in report["attempts"]}
    assert spans == {(0, 7), (4, 7)}  # the split parent and the half holding [6]
    assert report["matched"] == 4
    assert [m["move"] for m in report["moves"]] == ["escalate", "split", "escalate"]


def test_json_has_the_contract_keys_and_texts_only_under_a_filter() -> None:
    path = log_of("run-a", "docs__alpha.md")
    report, _ = view(path)
    assert list(report) == [
        "target",
        "type",
        "segment",
        "runs",
        "settings",
        "filter",
        "attempts",
        "moves",
        "unreadable_lines",
        "matched",
    ]
    assert report["type"] == "attempts" and report["filter"] == "all"
    assert report["settings"]["model"] == "taguru-sim" and "type" not in report["settings"]
    assert not {"piece_text", "corrective_ask", "answer"} & set(report["attempts"][0])
    narrowed, _ = view(path, Filter(paragraph=4))
    assert narrowed["matched"] == 2 and "piece_text" in narrowed["attempts"][0]


def test_a_torn_last_line_is_counted_and_said_never_a_failure() -> None:
    [path] = (RECORDS / "torn" / ".extract-trace").glob("*.attempts.jsonl")
    report, text = view(path)
    assert report["unreadable_lines"] == 1 and len(report["attempts"]) == 1
    assert "  1 unreadable line(s) skipped — the last line is torn (a killed run" in text
    assert " never reached a valid answer: taguru-ray inspect " in text


def test_a_log_spanning_a_replay_shows_each_run_and_what_was_replayed() -> None:
    path = log_of("replayed", "docs__delta.md")
    report, text = view(path)
    assert report["runs"] == ["1111aaaa1111aaaa", "2222bbbb2222bbbb"]
    assert report["segment"]["run_id"] == "2222bbbb2222bbbb"
    assert "2 runs — latest 2222bbbb2222bbbb" in text.splitlines()[0]
    assert "  run 2222bbbb2222bbbb (replay auto)\n" in text
    assert "  replayed from 1111aaaa1111aaaa #1\n" in text


def test_the_command_quotes_the_path_only_when_the_shell_needs_it() -> None:
    piece = "5b693dbc77c9204eaa26df517c050d2d"
    assert inspect_command("out/.extract-trace/a.attempts.jsonl", piece) == (
        "taguru-ray inspect out/.extract-trace/a.attempts.jsonl --piece 5b693dbc77c9"
    )
    assert inspect_command("my out/a.attempts.jsonl", piece) == (
        "taguru-ray inspect 'my out/a.attempts.jsonl' --piece 5b693dbc77c9"
    )
    assert inspect_command("it's/a.attempts.jsonl", piece).startswith(
        "taguru-ray inspect 'it'\"'\"'s/a.attempts.jsonl' --piece "
    )


def test_unknown_record_types_are_skipped_and_an_unlabeled_piece_has_no_paragraphs() -> None:
    lines = read_lines(
        b'{"type":"segment","run_id":"r","source":"a.md","resumed":true}\n'
        b'{"type":"later_kind","x":1}\n'
        b'{"type":"attempt","run_id":"r","attempt_seq":1,"piece_id":"ab","stage":"item",'
        b'"state":"timeout","messages":[{"role":"user","content":"no labels here"}],'
        b'"answer":null}\n'
    )
    report = build_report("log", lines, Filter())
    [row] = report.attempts
    assert row.paragraph_first is None and row.piece_bytes == len("no labels here")
    text = render_text(report)
    assert "(resumed)" in text.splitlines()[0]
    assert "(14 B, unlabeled)  attempt ?/?  timeout" in text


def test_a_chunk_context_block_rides_in_the_preamble_not_in_the_piece() -> None:
    piece = "[7] The seventh paragraph.\n\n[8] The eighth."
    turn = f"Segment 'a.md', part 3 of 4:\nContext only.\nPreceding text: six.\n\n{piece}"
    lines = read_lines(
        json.dumps(
            {
                "type": "attempt",
                "run_id": "r",
                "attempt_seq": 1,
                "piece_id": "cd",
                "chunk_index": 2,
                "stage": "item",
                "state": "stop_valid",
                "messages": [{"role": "user", "content": turn}],
            }
        ).encode()
    )
    [row] = build_report("log", lines, Filter()).attempts
    assert (row.chunk_total, row.paragraph_first, row.paragraph_last) == (4, 7, 8)
    assert row.piece_bytes == len(piece) and row.piece_text == turn


def inspect_cli(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "taguru_ray", "inspect", *args]
    return subprocess.run(command, capture_output=True, text=True, cwd=REPO, check=False)


def test_the_verb_reads_a_log_renders_json_and_names_a_missing_file(tmp_path: Path) -> None:
    path = str(log_of("run-a", "docs__beta.md"))
    result = inspect_cli(path)
    assert result.returncode == 0, result.stderr
    assert "never reached a valid answer: taguru-ray inspect" in result.stdout
    as_json = inspect_cli(path, "--piece", "6cab", "--json")
    assert as_json.returncode == 0 and json.loads(as_json.stdout)["matched"] == 2
    missing = inspect_cli(str(tmp_path / "nope.attempts.jsonl"))
    assert missing.returncode == 2
    assert f"taguru-ray: inspect: {tmp_path / 'nope.attempts.jsonl'}: no such file" in (
        missing.stderr
    )
    both = inspect_cli(path, "--piece", "6cab", "--paragraph", "1")
    assert both.returncode == 2 and "not allowed with argument" in both.stderr
    [trace] = (RECORDS / "run-a" / ".extract-trace").glob("docs__alpha.md-*[0-9a-f].jsonl")
    not_a_log = inspect_cli(str(trace))
    assert not_a_log.returncode == 1 and "not an attempts log" in not_a_log.stderr


@pytest.mark.parametrize("value", ["-1", "x"])
def test_a_paragraph_must_be_an_index(value: str) -> None:
    result = inspect_cli(str(log_of("run-a", "docs__beta.md")), "--paragraph", value)
    assert result.returncode == 2 and "needs a paragraph index" in result.stderr


def test_a_gleaning_pass_is_shown_as_one_and_tallied_apart(tmp_path: Path) -> None:
    path = log_of("run-a", "docs__alpha.md")
    records = [json.loads(line) for line in path.read_text().splitlines()]
    first = next(r for r in records if r["type"] == "attempt")
    gleaning = {
        **first,
        "attempt_seq": 9,
        "stage": "gleaning",
        "attempt": 1,
        "gleans": {"run_id": first["run_id"], "attempt_seq": first["attempt_seq"]},
        "messages": [
            *first["messages"],
            {"role": "assistant", "content": first["answer"]},
            {"role": "user", "content": "What did the answer miss?"},
        ],
    }
    log = tmp_path / "log.attempts.jsonl"
    log.write_text(path.read_text() + json.dumps(gleaning) + "\n")
    report, text = view(log)
    assert report["attempts"][-1]["gleans"]["attempt_seq"] == first["attempt_seq"]
    assert "gleaning pass 1  stop_valid" in text
    assert f"  gleans #{first['attempt_seq']}" in text
    assert "  4 attempt(s): 4 stop_valid · 1 gleaning pass(es): 1 stop_valid · 0 move(s)" in text
    _, opened = view(log, Filter(piece=first["piece_id"][:12]))
    assert "--- gleaning ask (#9" in opened
