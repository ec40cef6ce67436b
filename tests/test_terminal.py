"""Control characters never act on a terminal (issue 37, item 14).

A file name, a source id or a session's text can hold ESC, BEL, NUL, a line
break or a bidi override. Report lines escape them (`printable`), output names
replace them (`names.flatten`), and on a terminal every verb's output passes a
guard that escapes what is left — colours and line breaks kept.
"""

from __future__ import annotations

import io
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from taguru_ray.contract.control_chars import unsafe
from taguru_ray.contract.names import output_name
from taguru_ray.text.terminal import TerminalGuard, guarded_terminal, printable, raw
from tests.support import CONTEXT, REPO, Cli


def test_printable_escapes_controls_and_keeps_everything_else() -> None:
    assert printable("a\x1b[2Jb") == "a\\u{1b}[2Jb"
    assert printable("bell\x07 nul\x00 nl\n cr\r") == "bell\\u{7} nul\\u{0} nl\\u{a} cr\\u{d}"
    assert printable("rtl\u202eevil") == "rtl\\u{202e}evil"
    assert printable("C:\\path 酒蔵 ✓") == "C:\\path 酒蔵 ✓"


@pytest.mark.fuzz
@given(st.text())
def test_a_printable_line_is_one_line_with_no_control_character(text: str) -> None:
    shown = printable(text)
    assert not any(unsafe(char) for char in shown)
    assert (shown == text) == (not any(unsafe(char) for char in text))


@pytest.mark.fuzz
@given(st.text())
def test_an_output_name_holds_no_control_character(source: str) -> None:
    name = output_name(source)
    assert not any(unsafe(char) for char in name) and name.endswith(".jsonl")


def test_names_that_differ_only_in_a_control_character_stay_apart() -> None:
    assert output_name("a\x1b.md") != output_name("a\x07.md")
    assert output_name("plain/a.md") == output_name("plain/a.md")  # unchanged for others


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_guard_escapes_on_a_terminal_and_keeps_colours_and_lines() -> None:
    screen = Tty()
    guard = guarded_terminal(screen)
    assert isinstance(guard, TerminalGuard) and raw(guard) is screen
    guard.write("name \x1b[2J\x07 \x1b[36mcoloured\x1b[0m\tcol\n")
    assert screen.getvalue() == "name \\u{1b}[2J\\u{7} \x1b[36mcoloured\x1b[0m\tcol\n"
    piped = io.StringIO()
    assert guarded_terminal(piped) is piped  # a pipe gets the bytes exactly


def test_a_verb_on_a_real_terminal_shows_no_raw_escape(tmp_path: Path) -> None:
    """`verify` names a refused source file by its path: on a pty the ESC in that path
    arrives escaped, not as a screen clear."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "evil\x1b[2J\x07.jsonl").write_bytes(b"not json\n")
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "taguru_ray", "verify", str(out)],
        stdout=follower, stderr=follower, stdin=subprocess.DEVNULL, cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    os.close(follower)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the child closed its end
            break
        if not chunk:
            break
        seen += chunk
    os.close(leader)
    assert process.wait(60) == 1
    text = seen.decode("utf-8", errors="replace")
    assert "evil" in text and "\\u{1b}[2J" in text, text
    assert "\x1b[2J" not in text and "\x07" not in text


def test_extract_names_a_control_character_file_escaped_and_writes_a_clean_name(
    cli: Cli, tmp_path: Path
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    evil = docs / "evil\x1b[2J\x07.md"
    evil.write_text("Ray schedules tasks on a cluster of nodes.\n")
    out = tmp_path / "out"
    result = cli.extract("--context", CONTEXT, "--out", str(out), str(docs))
    assert result.returncode == 0, result.stderr
    for stream in (result.stdout, result.stderr):
        assert "\x1b" not in stream and "\x07" not in stream
    assert "evil\\u{1b}[2J\\u{7}.md" in result.stdout
    (written,) = out.glob("*.jsonl")
    assert not any(unsafe(char) for char in written.name)
    rerun = cli.extract("--context", CONTEXT, "--out", str(out), str(docs))
    assert rerun.returncode == 0 and "unchanged, skipped" in rerun.stdout
