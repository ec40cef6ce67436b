"""--vocabulary and --schema through one segment: prompt, occurrence allowlist, Stage 2, trace."""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from taguru_ray.contract.completion import CompletionRequest
from taguru_ray.contract.context_schema import load_schema, schema_digest
from taguru_ray.contract.source_file import parse_source_file
from taguru_ray.engine.ports import Model
from taguru_ray.engine.run_inputs import load_run_inputs
from taguru_ray.engine.segment import extract_segment
from taguru_ray.errors import StartupError
from taguru_ray.pipeline.run_inputs import RunInputs
from taguru_ray.pipeline.segment_job import SegmentJob, SegmentOutcome
from taguru_ray.pipeline.vocabulary import Vocabulary, vocabulary_digest
from taguru_ray.settings import checkpoint_fingerprint
from taguru_ray.text.redact import GROUPS, builtin_rules
from tests.test_segment_run import CONTEXT, TEXT, Canned, MemoryRecorder, answer, ok, settings

SCHEMA = {
    "schema": 1,
    "mode": "warn",
    "closed_labels": True,
    "types": {"Platform": {}, "Software": {}},
    "relations": {"runs on": {"domain": ["Software"], "range": ["Platform"]}, "manages": {}},
}


def schema(**changes: Any) -> Any:
    return load_schema(json.dumps({**SCHEMA, **changes}).encode(), path="schema.json")


def run(model: Canned, recorder: MemoryRecorder, inputs: RunInputs) -> SegmentOutcome:
    job = SegmentJob(0, "docs/ray.md", TEXT.encode(), "docs/ray.md", ())
    return asyncio.run(
        extract_segment(
            job, settings(), "run1", Model(model.complete, model.next_seq), recorder, inputs
        )
    )


def system_of(request: CompletionRequest) -> str:
    return request.messages[0]["content"]


def steering_record(recorder: MemoryRecorder) -> dict[str, Any]:
    records = [json.loads(line) for line in recorder.files["trace"].splitlines()]
    return next(r for r in records if r["type"] == "steering")


def test_context_names_are_prompted_traced_and_never_fail_the_occurrence_check() -> None:
    vocabulary = Vocabulary(
        concepts=frozenset({"Kubernetes Engine", "Ray"}), labels=frozenset({"runs on"})
    )
    # "Kubernetes Engine" is the context's spelling; the segment only says "Kubernetes".
    model = Canned(lambda r: ok(answer(("Ray", "runs on", "Kubernetes Engine", 1))))
    recorder = MemoryRecorder()
    outcome = run(model, recorder, RunInputs(vocabulary=vocabulary))
    assert outcome.status == "written", outcome.notes
    system = system_of(model.requests[0])
    assert "Names the target context already uses" in system
    assert system.endswith(": Kubernetes Engine, Ray")
    parsed = parse_source_file(recorder.files["source"])
    assert [a.object for a in parsed.associations] == ["Kubernetes Engine"]
    assert steering_record(recorder)["context_names"] == ["Kubernetes Engine", "Ray"]


def test_without_the_vocabulary_the_same_answer_is_removed_as_not_in_the_segment() -> None:
    model = Canned(lambda r: ok(answer(("Ray", "runs on", "Kubernetes Engine", 1))))
    recorder = MemoryRecorder()
    outcome = run(model, recorder, RunInputs())
    assert outcome.status == "written"
    assert any("removed:" in note and "Kubernetes Engine" in note for note in outcome.notes)
    assert steering_record(recorder)["context_names"] == []


def test_the_schema_block_is_prompted_and_its_types_pass_the_occurrence_check() -> None:
    model = Canned(
        lambda r: ok(
            answer(
                ("Ray", "runs on", "Kubernetes", 1),
                ("Ray", "schema:type", "Software", 1),
                ("Kubernetes", "schema:type", "Platform", 1),
            )
        )
    )
    recorder = MemoryRecorder()
    outcome = run(model, recorder, RunInputs(schema=schema()))
    assert outcome.status == "written", outcome.notes
    assert len(model.requests) == 1  # typed as the relation expects: nothing to correct
    system = system_of(model.requests[0])
    assert "Entity types (use these exact spellings): Platform, Software" in system
    assert "- runs on: Software → Platform" in system
    assert len(parse_source_file(recorder.files["source"]).associations) == 3
    assert steering_record(recorder)["schema"] == {
        "types": ["Platform", "Software"],
        "constrained_relations": ["manages", "runs on"],
    }


def test_a_closed_label_finding_earns_one_stage2_correction() -> None:
    def respond(request: CompletionRequest) -> Any:
        if len(request.messages) > 2:  # the corrective turn: the label fixed
            return ok(answer(("KubeRay", "runs on", "Ray", 2)))
        return ok(answer(("KubeRay", "supervises", "Ray", 2)))

    model = Canned(respond)
    recorder = MemoryRecorder()
    outcome = run(model, recorder, RunInputs(schema=schema()))
    assert outcome.status == "written", outcome.notes
    ask = model.requests[1].messages[-1]["content"]
    assert (
        "associations[0].label: 'supervises' names no relation declared in this context's "
        "schema (closed_labels)"
    ) in ask
    attempts = recorder.attempts()
    assert [a["stage"] for a in attempts] == ["item", "cross_chunk"]


def test_a_standing_domain_violation_fails_the_segment_naming_it() -> None:
    model = Canned(
        lambda r: ok(
            answer(("Ray", "runs on", "Kubernetes", 1), ("Ray", "schema:type", "Platform", 1))
        )
    )
    outcome = run(model, MemoryRecorder(), RunInputs(schema=schema()))
    assert outcome.status == "failed"
    assert "invalid item(s) uncorrected" in outcome.notes[-1]
    assert "must be typed as one of [Software]" in outcome.notes[-1]


def test_mode_off_prompts_nothing_and_judges_nothing() -> None:
    model = Canned(lambda r: ok(answer(("KubeRay", "supervises", "Ray", 2))))
    recorder = MemoryRecorder()
    outcome = run(model, recorder, RunInputs(schema=schema(mode="off")))
    assert outcome.status == "written"
    assert "Entity types" not in system_of(model.requests[0])
    assert steering_record(recorder)["schema"] is None


def write_export(path: Path, *names: str) -> None:
    lines = [{"type": "source", "version": "2026-09-17", "id": "x", "context_id": CONTEXT}]
    lines += [{"subject": n, "label": "uses", "object": "Ray", "weight": 1.0} for n in names]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def test_loading_fills_the_digests_the_fingerprint_binds(tmp_path: Path) -> None:
    export = tmp_path / "export.jsonl"
    write_export(export, "KubeRay")
    document = tmp_path / "schema.json"
    document.write_text(json.dumps(SCHEMA, indent=4))
    chosen = settings(vocabulary=str(export), schema_file=str(document))
    inputs = load_run_inputs(chosen)
    assert inputs.vocabulary is not None and inputs.schema is not None
    fingerprint = checkpoint_fingerprint(chosen, inputs.digests, "abc")
    assert fingerprint["vocabulary_digest"] == vocabulary_digest(inputs.vocabulary)
    assert fingerprint["schema_digest"] == schema_digest(schema())  # layout-blind
    write_export(export, "KubeRay", "Serve")
    changed = load_run_inputs(settings(vocabulary=str(export)))
    assert changed.digests.vocabulary_digest != inputs.digests.vocabulary_digest


def test_ingested_binds_the_offered_relations(tmp_path: Path) -> None:
    export = tmp_path / "export.jsonl"
    write_export(export, "KubeRay")
    chosen = settings(vocabulary=str(export), chunk_context="ingested")
    value = checkpoint_fingerprint(chosen, load_run_inputs(chosen).digests, "abc")["chunk_context"]
    assert value.startswith("ingested:") and len(value) == len("ingested:") + 64


@pytest.mark.parametrize(
    ("flag", "content", "expected"),
    [
        ("schema_file", "{not json", "--schema {path}: "),
        ("schema_file", json.dumps({**SCHEMA, "schema": 2}), "--schema {path}: "),
        ("vocabulary", '{"subject": "a"}\n', "--vocabulary {path}: line 1"),
    ],
)
def test_an_unusable_file_is_a_startup_error_naming_flag_and_file(
    tmp_path: Path, flag: str, content: str, expected: str
) -> None:
    path = tmp_path / "input.jsonl"
    path.write_text(content)
    with pytest.raises(StartupError) as raised:
        load_run_inputs(settings(**{flag: str(path)}))
    assert str(raised.value).startswith(expected.format(path=path))


def test_a_missing_file_is_a_startup_error(tmp_path: Path) -> None:
    with pytest.raises(StartupError, match=r"--schema .*missing\.json: cannot be read"):
        load_run_inputs(settings(schema_file=str(tmp_path / "missing.json")))
    with pytest.raises(StartupError, match="--vocabulary"):
        load_run_inputs(settings(vocabulary=str(tmp_path / "nowhere")))


def test_candidates_are_offered_traced_and_bound_as_seg1() -> None:
    model = Canned(lambda r: ok(answer(("Ray", "runs on", "Kubernetes", 1))))
    recorder = MemoryRecorder()
    job = SegmentJob(0, "docs/ray.md", TEXT.encode(), "docs/ray.md", ())
    outcome = asyncio.run(
        extract_segment(
            job,
            settings(candidates=True),
            "run1",
            Model(model.complete, model.next_seq),
            recorder,
        )
    )
    assert outcome.status == "written"
    assert system_of(model.requests[0]).endswith(
        "Ray, runs, on, Kubernetes, KubeRay, manages, clusters"
    )
    assert steering_record(recorder)["candidates"][:4] == ["Ray", "runs", "on", "Kubernetes"]
    assert outcome.inputs is not None and outcome.inputs["candidates"] == "seg1"


def test_coverage_names_each_sentence_no_association_lands_in() -> None:
    model = Canned(lambda r: ok(answer(("Ray", "runs on", "Kubernetes", 1))))
    recorder = MemoryRecorder()
    job = SegmentJob(0, "docs/ray.md", TEXT.encode(), "docs/ray.md", ())
    outcome = asyncio.run(
        extract_segment(
            job, settings(coverage=True), "run1", Model(model.complete, model.next_seq), recorder
        )
    )
    assert outcome.status == "written"
    gap = "taguru: extract: docs/ray.md: uncovered: [paragraph 2] KubeRay manages Ray clusters."
    assert [note for note in outcome.notes if "uncovered:" in note] == [gap]
    assert outcome.counts["uncovered"] == 1
    assert outcome.report is not None and ", 1 sentence(s) uncovered (coverage) →" in outcome.report
    records = [json.loads(line) for line in recorder.files["trace"].splitlines()]
    (record,) = [r for r in records if r["type"] == "uncovered"]
    assert record["sentence"] == "KubeRay manages Ray clusters." and record["chunk_index"] == 0
    assert outcome.inputs is not None and "coverage" not in outcome.inputs  # report-only


def redacting() -> RunInputs:
    return RunInputs(redaction=tuple(builtin_rules(GROUPS)))


SECRET_TEXT = "# Ops\n\nRay mails ops@example.com daily.\n\nKubeRay manages Ray clusters."


def run_text(model: Canned, recorder: MemoryRecorder, text: str, inputs: RunInputs) -> Any:
    job = SegmentJob(0, "docs/ops.md", text.encode(), "docs/ops.md", ())
    return asyncio.run(
        extract_segment(
            job,
            settings(redact="both"),
            "run1",
            Model(model.complete, model.next_seq),
            recorder,
            inputs,
        )
    )


def test_the_model_sees_placeholders_and_a_placeholder_is_no_entity() -> None:
    def respond(request: CompletionRequest) -> Any:
        user = request.messages[1]["content"]
        placeholder = user[user.index("«") : user.index("»") + 1]
        return ok(answer(("Ray", "mails", placeholder, 1), ("KubeRay", "manages", "Ray", 2)))

    model = Canned(respond)
    recorder = MemoryRecorder()
    outcome = run_text(model, recorder, SECRET_TEXT, redacting())
    assert outcome.status == "written", outcome.notes
    assert "ops@example.com" not in json.dumps(
        [r.messages for r in model.requests], ensure_ascii=False
    )
    assert (
        outcome.notes[0]
        == "taguru: extract: docs/ops.md: redacted 1 match(es): email ×1 (paragraph 1)"
    )
    removed = [n for n in outcome.notes if "removed:" in n]
    assert len(removed) == 1 and "is a redaction placeholder, not an entity" in removed[0]
    source = recorder.files["source"].decode()
    assert "ops@example.com" not in source and "«redacted email " in source  # the passage
    assert outcome.report is not None and ", passage, 1 redacted," in outcome.report
    # The masked text's hash, never the file's own: with it and the passage anyone could
    # check a guess at the masked address (issue 16).
    passage = parse_source_file(recorder.files["source"]).passage
    assert outcome.inputs is not None and passage is not None
    assert outcome.inputs["sha256"] == hashlib.sha256(passage.text.encode()).hexdigest()
    assert outcome.inputs["sha256"] != hashlib.sha256(SECRET_TEXT.encode()).hexdigest()


def test_a_label_carrying_what_the_mask_hid_fails_the_segment_naming_line_and_rule() -> None:
    model = Canned(lambda r: ok(answer(("Ray", "mails ops@example.com", "KubeRay", 1))))
    recorder = MemoryRecorder()
    outcome = run_text(model, recorder, SECRET_TEXT, redacting())
    assert outcome.status == "failed"
    assert outcome.notes[-1] == (
        "taguru: extract: docs/ops.md: source-file line 3: the association's label carries "
        "what the redaction masks (rule email) — the answer holds what the masked segment "
        "never showed; nothing was written"
    )
    assert "source" not in recorder.files
