"""--redact end to end: planted secrets and personal data never reach the model or --out."""

from __future__ import annotations

import hashlib
import hmac
import json
import unicodedata
from pathlib import Path

import pytest

from taguru_ray.contract.names import output_name
from taguru_ray.simulate.harness import SimulatorProcess
from tests.support import CONTEXT, Cli
from tests.test_redact import EXPECTED_VALUES, PLANTED

pytestmark = pytest.mark.slow


def planted_values() -> dict[str, tuple[str, ...]]:
    """Rule → the exact values planted in the English and the Japanese text."""
    return {rule: EXPECTED_VALUES.get(rule, (value,) * 2) for rule, _, _, value in PLANTED}


def write_corpus(folder: Path) -> tuple[Path, Path]:
    folder.mkdir()
    english, japanese = folder / "english.md", folder / "japanese.md"
    english.write_text(
        "# Incident notes\n\n" + "\n\n".join(text for _, text, _, _ in PLANTED) + "\n"
    )
    japanese.write_text("# 障害メモ\n\n" + "\n\n".join(text for _, _, text, _ in PLANTED) + "\n")
    return english, japanese


@pytest.fixture
def capturing(tmp_path: Path) -> tuple[SimulatorProcess, Path]:
    capture = tmp_path / "prompts.jsonl"
    with SimulatorProcess("--capture", str(capture)) as simulator:
        yield simulator, capture


def test_no_planted_value_reaches_a_prompt_or_a_file_and_each_is_counted(
    ray_address: str, capturing: tuple[SimulatorProcess, Path], tmp_path: Path
) -> None:
    simulator, capture = capturing
    cli = Cli(ray_address, simulator)
    english, japanese = write_corpus(tmp_path / "docs")
    out = tmp_path / "out"
    result = cli.extract(
        "--context", CONTEXT, "--out", str(out), "--redact", "--coverage", str(tmp_path / "docs")
    )
    assert result.returncode == 0, result.stderr
    sent = capture.read_text(encoding="utf-8")
    assert sent.count('"messages"') >= 2
    written = {
        path: path.read_text(encoding="utf-8", errors="replace")
        for path in out.rglob("*")
        if path.is_file()
    }
    for rule, values in planted_values().items():
        for value in values:
            for line in value.splitlines():
                assert line not in sent, (rule, line)
                assert line not in result.stdout + result.stderr, (rule, line)
                leaks = [str(path) for path, text in written.items() if line in text]
                assert not leaks, (rule, line, leaks)
    assert "«redacted aws_access_key " in sent and "«redacted my_number " in sent
    # Counted by rule and paragraph, never by content: one stderr line per segment.
    for source in (english, japanese):
        (line,) = [
            x
            for x in result.stderr.splitlines()
            if x.startswith(f"taguru: extract: {source}: redacted ")
        ]
        for rule, _, _, _ in PLANTED:
            assert f"{rule} ×" in line, (rule, line)
        trace = out / ".extract-trace" / output_name(str(source))
        records = [json.loads(x) for x in trace.read_text().splitlines()]
        redactions = [r for r in records if r["type"] == "redaction"]
        assert {r["rule"] for r in redactions} == {rule for rule, _, _, _ in PLANTED}
        assert all(
            set(r) == {"type", "rule", "paragraph", "placeholder", "bytes"} for r in redactions
        )
        report = next(x for x in result.stdout.splitlines() if x.startswith(str(source)))
        assert f", passage, {len(redactions)} redacted" in report
    entries = json.loads((out / ".extract-manifest.json").read_text())["documents"]
    assert {entry["redaction"] for entry in entries.values()} == {"redact2"}
    # A rerun skips both segments; --coverage still quotes their sentences — masked.
    again = cli.extract(
        "--context", CONTEXT, "--out", str(out), "--redact", "--coverage", str(tmp_path / "docs")
    )
    assert again.returncode == 0 and "unchanged, skipped" in again.stdout
    assert ": uncovered: " in again.stderr
    for values in planted_values().values():
        for value in values:
            for line in value.splitlines():
                assert line not in again.stdout + again.stderr, line


def test_toggling_redaction_re_extracts_and_dry_run_counts_the_matches(
    cli: Cli, tmp_path: Path
) -> None:
    write_corpus(tmp_path / "docs")
    out = tmp_path / "out"
    base = ("--context", CONTEXT, "--out", str(out))
    assert cli.extract(*base, str(tmp_path / "docs")).returncode == 0
    plan = cli.extract(*base, "--redact", "secrets", "--dry-run", str(tmp_path / "docs"))
    assert plan.returncode == 0, plan.stderr
    assert plan.stdout.count(" redaction(s)") == 2 and "would extract" in plan.stdout
    cli.simulator.reset()
    assert cli.extract(*base, "--redact", "secrets", str(tmp_path / "docs")).returncode == 0
    assert cli.simulator.stats()["requests"] > 0  # redaction is a compute input


def test_a_malformed_rules_line_is_a_usage_error_naming_it(cli: Cli, tmp_path: Path) -> None:
    write_corpus(tmp_path / "docs")
    rules = tmp_path / "rules.tsv"
    rules.write_text("# mine\nemp_id\t\\bEMP-\\d{6}\\b\nticket no tab here\n")
    result = cli.extract(
        "--context",
        CONTEXT,
        "--out",
        str(tmp_path / "out"),
        "--redact",
        "--redact-rules",
        str(rules),
        str(tmp_path / "docs"),
    )
    assert result.returncode == 2
    assert f"{rules}: line 3" in result.stderr
    assert not (tmp_path / "out").exists()


def test_a_remote_endpoint_without_redaction_is_said_once(ray_address: str, tmp_path: Path) -> None:
    write_corpus(tmp_path / "docs")
    host = ray_address.rsplit(":", 1)[0]  # this node's own non-loopback address
    base = ("--context", CONTEXT, "--out", str(tmp_path / "out"), str(tmp_path / "docs"))
    with SimulatorProcess("--host", "0.0.0.0") as simulator:
        cli = Cli(ray_address, simulator)
        port = simulator.chat_url.split("://", 1)[1].split("/", 1)[0].rsplit(":", 1)[1]
        remote = cli.env(TAGURU_EXTRACT_URL=f"http://{host}:{port}/v1/chat/completions")
        told = cli.extract(*base, env=remote)
        assert told.returncode == 0, told.stderr
        notes = [x for x in told.stderr.splitlines() if "is not this machine" in x]
        assert notes == [
            f"taguru: extract: --redact is off and the endpoint {host} is not this machine: "
            "segments are sent as written — add --redact to mask secrets and personal data first"
        ]
        assert told.stderr.splitlines()[0] == notes[0]  # before the first segment
        masked = cli.extract(*base, "--redact", "--force", env=remote)
        assert masked.returncode == 0 and "is not this machine" not in masked.stderr
        local = cli.extract(*base, "--force")
        assert local.returncode == 0 and "is not this machine" not in local.stderr


def digests_of(text: str) -> set[str]:
    """Every plain digest of unredacted text an --out could betray: the file's, each
    paragraph's, each line's."""
    pieces = {text, *text.split("\n\n"), *text.splitlines()}
    return {hashlib.sha256(piece.encode("utf-8")).hexdigest() for piece in pieces if piece}


def test_no_digest_of_unredacted_text_is_stored_and_placeholders_are_keyed(
    cli: Cli, tmp_path: Path
) -> None:
    english, japanese = write_corpus(tmp_path / "docs")
    out = tmp_path / "out"
    env = cli.env(TAGURU_EXTRACT_REDACT_KEY="a key from the secret store")
    args = ("--context", CONTEXT, "--out", str(out), "--redact", str(tmp_path / "docs"))
    assert cli.extract(*args, env=env).returncode == 0
    everything = "\n".join(
        path.read_text(encoding="utf-8", errors="replace")
        for path in out.rglob("*")
        if path.is_file()
    )
    for source in (english, japanese):
        text = source.read_text(encoding="utf-8")
        for digest in digests_of(text):
            assert digest[:16] not in everything, (source.name, digest)
        # A placeholder is an HMAC under the key: no guess checks against it without the key.
        salt = hashlib.sha256(text.encode("utf-8")).hexdigest().encode("ascii")
        key = hashlib.sha256(b"taguru-ray redact key\0a key from the secret store").digest()
        trace = out / ".extract-trace" / output_name(str(source))
        records = [json.loads(x) for x in trace.read_text().splitlines()]
        rule, value = "aws_access_key", planted_values()["aws_access_key"][0]
        [placeholder] = {r["placeholder"] for r in records if r.get("rule") == rule}
        keyed = hmac.new(key, salt + value.encode("utf-8"), hashlib.sha256).hexdigest()
        shown = placeholder.removeprefix(f"«redacted {rule} ").removesuffix("»")
        assert len(shown) >= 4 and keyed.startswith(shown)
    # The same key: a rerun skips everything. Another key: every segment re-extracts.
    cli.simulator.reset()
    again = cli.extract(*args, env=env)
    assert again.returncode == 0 and cli.simulator.stats()["requests"] == 0
    other = cli.extract(*args, env=cli.env(TAGURU_EXTRACT_REDACT_KEY="another key"))
    assert other.returncode == 0 and "extract: 2 written" in other.stdout


SHAPES = Path(__file__).parent / "fixtures" / "redaction"


def test_every_shape_of_the_corpus_is_masked_before_the_model_and_under_out(
    ray_address: str, capturing: tuple[SimulatorProcess, Path], tmp_path: Path
) -> None:
    """Issue 16's corpus (full-width, NBSP, zero-width, JSON-quoted, PEM variants, US and
    spaced Japanese phones) through the real CLI: no secret in any prompt or in any file
    under --out, in any normal form, and no digest of the unredacted text either."""
    simulator, capture = capturing
    cli = Cli(ray_address, simulator)
    docs = tmp_path / "docs"
    docs.mkdir()
    text = (SHAPES / "shapes.md").read_text(encoding="utf-8")
    (docs / "shapes.md").write_text(text, encoding="utf-8")
    secrets = [s["secret"] for s in json.loads((SHAPES / "shapes.json").read_text())["secrets"]]
    out = tmp_path / "out"
    result = cli.extract("--context", CONTEXT, "--out", str(out), "--redact", str(docs))
    assert result.returncode == 0, result.stderr
    sent = capture.read_text(encoding="utf-8")
    written = "\n".join(
        path.read_text(encoding="utf-8", errors="replace")
        for path in out.rglob("*")
        if path.is_file()
    )
    for place, body in (("a prompt", sent), ("--out", written)):
        bodies = (body, unicodedata.normalize("NFKC", body))
        for secret in secrets:
            folded = unicodedata.normalize("NFKC", secret)
            assert not any(secret in b or folded in b for b in bodies), (place, secret)
    for digest in digests_of(text):
        assert digest[:16] not in written, digest
