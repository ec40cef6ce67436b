"""The helper process that hashes a rerun's segments (ADR 0046): its answers and its failures."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from taguru_ray.engine import digest_helper
from taguru_ray.engine.digest_helper import DigestHelper, worth_a_helper
from taguru_ray.pipeline.read import segment_sha256

MANY = digest_helper.HELPER_FROM
WANTED = {
    "skippable": True,
    "files": True,
    "redacting": False,
    "coverage": False,
    "manifest": True,
}


def test_a_helper_is_worth_it_only_for_a_big_skippable_corpus_of_files() -> None:
    assert worth_a_helper(MANY, **WANTED)
    assert not worth_a_helper(MANY - 1, **WANTED)
    # --force, staged sessions or URLs, --redact, --coverage, no manifest to skip by.
    for flag, value in (
        ("skippable", False),
        ("files", False),
        ("redacting", True),
        ("coverage", True),
        ("manifest", False),
    ):
        assert not worth_a_helper(MANY, **{**WANTED, flag: value}), flag


@pytest.fixture
def helper() -> Iterator[DigestHelper]:
    started = DigestHelper.start()
    assert started is not None
    yield started
    started.close()


def test_the_helper_hashes_as_the_driver_and_leaves_the_rest_to_it(
    tmp_path: Path, helper: DigestHelper
) -> None:
    plain = tmp_path / "plain.md"
    plain.write_bytes(b"Alpha depends on Beta.\n")
    bom = tmp_path / "bom.md"
    bom.write_bytes(b"\xef\xbb\xbfAlpha depends on Beta.\n")
    newline = tmp_path / "two\nlines.md"
    newline.write_bytes("Ünïcode names travel.\n".encode())
    not_text = tmp_path / "latin1.md"
    not_text.write_bytes(b"caf\xe9\n")
    fifo = tmp_path / "pipe.md"
    os.mkfifo(fifo)
    missing = tmp_path / "gone.md"
    paths = [str(p) for p in (plain, bom, newline, not_text, fifo, missing, plain)]
    expected = segment_sha256(plain.read_bytes())
    assert helper.digests(paths) == [
        expected,
        expected,  # the BOM is not hashed, as the manifest hashes it
        segment_sha256(newline.read_bytes()),
        None,  # the driver reads these itself and says why
        None,
        None,
        expected,
    ]
    assert helper.digests([]) == []


def test_a_helper_that_died_answers_nothing_from_then_on(
    tmp_path: Path, helper: DigestHelper
) -> None:
    segment = tmp_path / "a.md"
    segment.write_text("Alpha depends on Beta.\n")
    assert helper.digests([str(segment)]) != [None]
    child = helper._child
    assert child is not None
    child.kill()
    child.wait()
    assert helper.digests([str(segment), str(segment)]) == [None, None]
    assert helper._child is None  # not asked again
    helper.close()


def test_a_garbled_reply_is_no_answer(tmp_path: Path) -> None:
    # A child that answers two bytes that are no digest line, then waits for its input.
    garbler = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; sys.stdout.buffer.write(b'\\0\\0\\0\\2\\xff\\xfe');"
            " sys.stdout.flush(); sys.stdin.buffer.read()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    helper = DigestHelper(garbler)
    assert helper.digests([str(tmp_path / "a.md")]) == [None]
    assert helper._child is None and garbler.poll() is not None  # stopped, not left running
