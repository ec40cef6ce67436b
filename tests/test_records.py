"""Every record type against CONTRACT.md: its keys in the contract's order, what it omits
when empty, and that a reader gets back what a writer wrote."""

from __future__ import annotations

from typing import Any

import pytest

from taguru_ray.contract.manifest_entry import CHECKPOINT_FIELDS, MANIFEST_FIELDS, ManifestEntry
from taguru_ray.contract.records import attempts, sidecar, trace
from taguru_ray.contract.records.checkpoint import CheckpointDocument, CheckpointUnit
from taguru_ray.contract.records.typed import Rung, Typed

REF = {"run_id": "0123456789abcdef", "attempt_seq": 3}

# (type, keys in CONTRACT.md's order, a full instance's fields)
CASES: list[tuple[type[Typed], str, dict[str, Any]]] = [
    (
        trace.SegmentTrace,
        "type run_id source segment_sha256 batch_path chunk_total converter",
        dict(run_id="r", source="a.pdf", segment_sha256="s", batch_path="b", chunk_total=2,
             converter="pdf:pypdfium2 5.15.2/1"),
    ),
    (
        trace.RedactionTrace,
        "type rule paragraph placeholder bytes preexisting",
        dict(rule="aws", paragraph=1, placeholder="[x]", bytes=20, preexisting=True),
    ),
    (
        trace.SteeringTrace,
        "type chunk_index candidates system_sha256 pinned_from vocabulary context_names schema",
        dict(
            candidates=["Ray"],
            system_sha256="s",
            pinned_from="r0",
            vocabulary=[{"label": "runs on", "count": 2}],
            context_names=["Ray"],
            schema={"types": [], "constrained_relations": []},
        ),
    ),
    (
        trace.CarryoverTrace,
        "type chunk_index system_sha256 carryover",
        dict(chunk_index=1, system_sha256="s", carryover=[{"name": "Ray", "type": None}]),
    ),
    (
        trace.StructureTrace,
        "type unit level heading paragraph_first paragraph_last",
        dict(unit=0, level=1, heading="Intro", paragraph_first=0, paragraph_last=3),
    ),
    (
        trace.ChunkRecord,
        "type source chunk_index chunk_total chunk_sha256 chunk_bytes paragraph_first "
        "paragraph_last",
        dict(
            source="a.md",
            chunk_index=0,
            chunk_total=1,
            chunk_sha256="c",
            chunk_bytes=10,
            paragraph_first=0,
            paragraph_last=2,
        ),
    ),
    (
        trace.OverviewTrace,
        "type chunk_index units cast",
        dict(
            chunk_index=0, units=[{"unit": 1, "summary": "s"}], cast=[{"name": "n", "gloss": "g"}]
        ),
    ),
    (
        trace.ChunkContextTrace,
        "type chunk_index sha256 bytes position references cast known synopsis overlap_paragraphs",
        dict(
            chunk_index=0,
            sha256="s",
            bytes=9,
            position=[1],
            references=[2],
            cast=("A",),
            known=("B",),
            synopsis=(1,),
            overlap_paragraphs=[3, 4],
        ),
    ),
    (
        trace.PieceTrace,
        "type piece_id chunk_index chunk_sha256 piece_bytes paragraph_first paragraph_last "
        "reused attempt",
        dict(
            piece_id="p",
            chunk_index=0,
            chunk_sha256="c",
            piece_bytes=5,
            paragraph_first=0,
            paragraph_last=1,
            reused=False,
            attempt=REF,
        ),
    ),
    (
        trace.QuestionItem,
        "type item paragraph question piece_id",
        dict(paragraph=0, question="Why?", piece_id="p"),
    ),
    (
        trace.AssociationItem,
        "type item subject label object piece_id",
        dict(subject="Ray", label="runs on", object="Kubernetes", piece_id="p"),
    ),
    (
        trace.AliasItem,
        "type item alias canonical piece_id",
        dict(item="concept", alias="K8s", canonical="Kubernetes", piece_id="p"),
    ),
    (
        trace.LossTrace,
        "type item reason rule path raw piece_id attempt paragraph text kept_piece_id",
        dict(
            item="association",
            reason="duplicate",
            rule="r",
            path="associations[0]",
            raw={"subject": "a"},
            piece_id="p",
            attempt=REF,
            paragraph=0,
            text="t",
            kept_piece_id="q",
        ),
    ),
    (
        trace.ParagraphTrace,
        "type paragraph bytes items covered text locator",
        dict(paragraph=0, bytes=4, items=0, covered=False, text="t", locator={"page": 2}),
    ),
    (
        trace.UncoveredTrace,
        "type paragraph sentence text chunk_index chunk_sha256",
        dict(paragraph=0, sentence="s.", text="t", chunk_index=0, chunk_sha256="c"),
    ),
    (
        attempts.SegmentAttempts,
        "type run_id source segment_sha256 resumed",
        dict(run_id="r", source="a.md", segment_sha256="s", resumed=False),
    ),
    (
        attempts.SettingsRecord,
        "type prompt_version model questions_n fact_budget structured_output max_output_tokens "
        "chunk_bytes chunk_context lossy schema_digest candidates redaction vocabulary_digest "
        "rung",
        dict(
            prompt_version=102,
            model="m",
            questions_n=0,
            fact_budget=0,
            structured_output="",
            max_output_tokens=0,
            chunk_bytes="",
            chunk_context="",
            lossy=False,
            schema_digest="",
            candidates="",
            redaction="",
            vocabulary_digest="",
            rung=Rung.JSON_OBJECT,
        ),
    ),
    (
        attempts.ReplayRecord,
        "type mode replay_from",
        dict(mode="auto", replay_from="out/.extract-trace"),
    ),
    (attempts.SystemRecord, "type sha256 bytes content", dict(sha256="s", bytes=1, content="x")),
    (
        attempts.AttemptRecord,
        "type run_id attempt_seq corrects gleans replayed_from piece_id source chunk_index "
        "stage attempt max_attempts state length_limited transport_retries elapsed_seconds "
        "requested_max_tokens rung piece_bytes finish_reason input_tokens output_tokens "
        "total_tokens messages answer parse_error validation_issues removed_items batch_id "
        "custom_id",
        dict(
            run_id="r",
            attempt_seq=2,
            corrects=REF,
            gleans=REF,
            replayed_from=REF,
            piece_id="p",
            source="a.md",
            chunk_index=0,
            stage="item",
            attempt=2,
            max_attempts=2,
            state="stop_valid",
            length_limited=False,
            transport_retries=0,
            elapsed_seconds=0.5,
            requested_max_tokens=100,
            rung="prompted JSON",
            piece_bytes=10,
            finish_reason="stop",
            input_tokens=1,
            output_tokens=2,
            total_tokens=3,
            messages=[{"role": "system", "system_sha256": "s"}, {"role": "user", "content": "u"}],
            answer="{}",
            parse_error=None,
            validation_issues=None,
            removed_items=None,
            batch_id="batch_1",
            custom_id="c-1",
        ),
    ),
    (
        attempts.EscalateMove,
        "type move run_id piece_id chunk_index reason from_max_tokens to_max_tokens",
        dict(
            run_id="r", piece_id="p", chunk_index=0, reason="w", from_max_tokens=1, to_max_tokens=2
        ),
    ),
    (
        attempts.DemoteMove,
        "type move run_id piece_id chunk_index reason from_rung to_rung",
        dict(
            run_id="r",
            piece_id="p",
            chunk_index=0,
            reason="w",
            from_rung="json_schema",
            to_rung="json_object",
        ),
    ),
    (
        attempts.SplitMove,
        "type move run_id piece_id chunk_index reason piece_bytes split_cap sub_pieces",
        dict(
            run_id="r",
            piece_id="p",
            chunk_index=0,
            reason="w",
            piece_bytes=9,
            split_cap=4,
            sub_pieces=3,
        ),
    ),
    (
        attempts.RunawayMove,
        "type move run_id piece_id chunk_index reason piece_bytes answer_bytes",
        dict(run_id="r", piece_id="p", chunk_index=0, reason="w", piece_bytes=9, answer_bytes=99),
    ),
    (attempts.ReplaySummary, "type replayed live", dict(replayed=1, live=0)),
    (sidecar.RunRecord, "type run_id", dict(run_id="r")),
    (
        sidecar.SidecarAttempt,
        "type run_id attempt_seq piece_id source stage chunk_index attempt max_attempts state "
        "length_limited elapsed_seconds provider_metadata parse_error validation_issues "
        "removed_items piece_bytes requested_max_tokens response_text",
        dict(
            run_id="r",
            attempt_seq=1,
            piece_id="p",
            source="a.md",
            stage="cross_chunk",
            chunk_index=0,
            attempt=1,
            max_attempts=2,
            state="length_limited",
            length_limited=True,
            elapsed_seconds=1.0,
            provider_metadata={
                "finish_reason": "length",
                "input_tokens": 1,
                "output_tokens": 2,
                "total_tokens": 3,
            },
            parse_error="cut off",
            validation_issues=None,
            removed_items=["associations[0]: x"],
            piece_bytes=10,
            requested_max_tokens=50,
            response_text="{",
        ),
    ),
    (
        sidecar.SidecarSegment,
        "type source associations concepts labels questions duplicates dropped removed "
        "uncovered redacted carryover_names gleaning_passes failed_gleanings batch_path",
        dict(
            source="a.md",
            associations=1,
            concepts=0,
            labels=0,
            questions=0,
            duplicates=0,
            dropped=0,
            removed=0,
            uncovered=0,
            redacted=1,
            carryover_names=2,
            gleaning_passes=1,
            failed_gleanings=0,
            batch_path="b",
        ),
    ),
    (
        sidecar.GatewayRecord,
        "type run_id completions requests outcomes inflight_limit inflight_adaptive "
        "max_in_flight input_tokens output_tokens window inflight_mean inflight_peak bound "
        "bound_why client_cpu_share host_cpu_busy",
        dict(
            run_id="r",
            completions=3,
            requests=4,
            outcomes={"ok": 3, "http_429": 1},
            inflight_limit=8,
            inflight_adaptive=True,
            max_in_flight=8,
            input_tokens=10,
            output_tokens=20,
            window=8,
            inflight_mean=7.5,
            inflight_peak=8,
            bound="endpoint",
            bound_why="auto held 8 in flight, where completions per second stopped rising",
            client_cpu_share=0.12,
            host_cpu_busy=0.4,
        ),
    ),
    (
        sidecar.EngineRecord,
        "type run_id engine model version replicas gpus accelerator accelerators starts lost",
        dict(
            run_id="r",
            engine="vllm",
            model="Qwen/Qwen2.5-0.5B-Instruct",
            version="0.9.1",
            replicas=2,
            gpus=1,
            accelerator="H100",
            accelerators=["H100"],
            starts=[
                sidecar.EngineStart(
                    replica=0,
                    generation=1,
                    node="10.0.0.4",
                    accelerator="H100",
                    version="0.9.1",
                    start_s=41.5,
                )
            ],
            lost=0,
        ),
    ),
    (
        CheckpointUnit,
        "chunk_index attempt output user answer removed unparsed",
        dict(
            chunk_index=0,
            attempt=None,
            output={"associations": [], "aliases": [], "questions": []},
            user="u",
            answer="{}",
            removed=[],
            unparsed=[],
        ),
    ),
    (
        CheckpointDocument,
        "fingerprint units overview overview_digest splits",
        dict(
            fingerprint={"sha256": "s"},
            units={},
            overview={},
            overview_digest="",
            splits={"p": 512},
        ),
    ),
]


@pytest.mark.parametrize(
    ("kind", "keys", "fields"), CASES, ids=lambda c: getattr(c, "__name__", "")
)
def test_keys_are_in_the_contracts_order_and_a_reader_gets_the_record_back(
    kind: type[Typed], keys: str, fields: dict[str, Any]
) -> None:
    assert kind.keys() == tuple(keys.split())
    written = kind(**fields)
    record = written.record()
    assert tuple(record) == kind.keys()  # a full instance writes every key
    assert kind.read(record) == written


def test_keys_written_only_when_present_are_left_out_when_empty() -> None:
    bare = trace.RedactionTrace(rule="r", paragraph=0, placeholder="p", bytes=1).record()
    assert "preexisting" not in bare
    context = trace.ChunkContextTrace(
        chunk_index=0, sha256="s", bytes=1, position=[], references=[]
    ).record()
    assert list(context) == ["type", "chunk_index", "sha256", "bytes", "position", "references"]
    escalate = attempts.EscalateMove(
        run_id="r", piece_id="p", chunk_index=0, reason="w", from_max_tokens=1, to_max_tokens=None
    ).record()
    assert escalate["to_max_tokens"] is None  # null is meaningful there: no cap
    document = CheckpointDocument(fingerprint={}, units={}).record()
    assert "splits" not in document


def test_manifest_and_checkpoint_fields_follow_the_contract() -> None:
    compute = [
        "sha256", "model", "prompt_version", "context", "questions_n", "no_passage",
        "description", "fact_budget", "structured_output", "max_output_tokens",
        "escalation_factor", "runaway_ratio",
    ]  # fmt: skip
    tail = (
        "lossy schema_digest candidates redaction vocabulary_digest carryover gleanings "
        "converter"
    )
    assert (
        *compute, "chunk_context", "chunk_bytes", *tail.split(), "source_id", "date", "tags",
        "output",
    ) == MANIFEST_FIELDS  # fmt: skip
    assert (*compute, "chunk_bytes", "chunk_context", *tail.split()) == CHECKPOINT_FIELDS
    entry = ManifestEntry(sha256="s", model="m", prompt_version=102, output="o")
    assert "carryover" not in entry.record() and entry.record()["tags"] == []
    assert "converter" not in entry.record()  # a text segment's entry is as it was


def test_a_reader_skips_a_line_of_another_type_or_shape() -> None:
    assert attempts.AttemptRecord.read({"type": "move"}) is None
    assert attempts.AttemptRecord.read({"type": "attempt", "run_id": "r"}) is None
    read = attempts.SystemRecord.read(
        {"type": "system", "sha256": "s", "bytes": 1, "content": "x", "new": 1}
    )
    assert read is not None and read.content == "x"  # a key from a newer writer is ignored
