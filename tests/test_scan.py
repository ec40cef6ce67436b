"""What the driver knows of a segment before any worker sees it: under --redact, a path
that holds what the rules mask is refused, and the hash is the masked text's."""

from __future__ import annotations

import hashlib
from pathlib import Path

from taguru_ray.engine.scan import scan
from taguru_ray.pipeline.read import read_segment, redact_segment
from taguru_ray.pipeline.run_inputs import RunInputs
from taguru_ray.text.redact import builtin_rules, groups_from_setting
from tests.test_segment_run import settings

RULES = tuple(builtin_rules(groups_from_setting("both")))


def test_a_path_holding_what_redact_masks_is_refused_and_never_sent(tmp_path: Path) -> None:
    named = tmp_path / "taro.yamada@example.com-notes.md"
    named.write_text("Ray runs on Kubernetes.\n")
    masked = scan(settings(redact="both"), 0, str(named), False, set(), RunInputs(redaction=RULES))
    assert masked.data is None and masked.refusal is not None
    assert masked.refusal.startswith("its path holds what --redact masks (email) — rename")
    plain = scan(settings(), 0, str(named), False, set(), RunInputs())
    assert plain.refusal is None and plain.data is not None


def test_under_redact_the_manifest_hash_is_the_masked_texts(tmp_path: Path) -> None:
    path = tmp_path / "ops.md"
    text = "Mail ops@example.com for access.\n"
    path.write_text(text)
    inputs = RunInputs(redaction=RULES, redact_key=b"k" * 32)
    scanned = scan(settings(redact="both"), 0, str(path), False, set(), inputs)
    assert scanned.inputs is not None
    masked, _ = redact_segment(read_segment(str(path), text.encode()), RULES, b"k" * 32)
    assert "ops@example.com" not in masked.text
    assert scanned.inputs["sha256"] == hashlib.sha256(masked.text.encode()).hexdigest()
    assert scanned.inputs["sha256"] != hashlib.sha256(text.encode()).hexdigest()
