"""A whole segment through the pipeline with canned answers: no Ray, no network, no disk."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from taguru_ray.contract.completion import Completion, CompletionRequest
from taguru_ray.contract.source_file import parse_source_file
from taguru_ray.engine.ports import Model
from taguru_ray.engine.segment import extract_segment
from taguru_ray.pipeline.claims import Proposal, Verdict, judge
from taguru_ray.pipeline.segment_job import Resume, SegmentJob, SegmentOutcome
from taguru_ray.settings import Settings

CONTEXT = "5b0d7f0e-6c1a-4d8e-9a51-2f3c4b5d6e7f"
TEXT = "# Ray\n\nRay runs on Kubernetes.\n\nKubeRay manages Ray clusters."


def settings(**overrides: Any) -> Settings:
    base = dict(paths=("d",), out="out", context=CONTEXT, model="m", url="http://x")
    return Settings.of(**{**base, **overrides})


def answer(*triples: tuple[str, str, str, int]) -> str:
    return json.dumps(
        {
            "associations": [
                {"subject": s, "label": label, "object": o, "paragraph": p}
                for s, label, o, p in triples
            ],
            "aliases": [],
        }
    )


@dataclass
class MemoryRecorder:
    units: dict[str, dict[str, Any]] = field(default_factory=dict)
    splits: dict[str, int] = field(default_factory=dict)
    overview: dict[str, str] = field(default_factory=dict)
    overview_digest: str = ""
    log_records: list[dict[str, Any]] = field(default_factory=list)
    sidecar_records: list[dict[str, Any]] = field(default_factory=list)
    saved: list[str] = field(default_factory=list)
    files: dict[str, bytes] = field(default_factory=dict)
    fresh: bool | None = None
    sidecar_path: str | None = None
    parts: tuple[bytes, ...] | None = None

    def load(self, fingerprint: dict[str, Any], *, discard: bool) -> tuple[Resume, str | None]:
        if discard:
            return Resume(), None
        return Resume(dict(self.units), dict(self.splits), dict(self.overview)), None

    async def save_split(self, piece_id: str, cap: int) -> None:
        self.splits[piece_id] = cap

    async def save_overview(self, chunk_sha256: str, answer: str) -> None:
        self.overview[chunk_sha256] = answer

    async def bind_overview(self, digest: str, *, keep: bool) -> bool:
        stale = keep and bool(self.units) and self.overview_digest != digest
        if stale:
            self.units.clear()
        self.overview_digest = digest
        return stale

    async def begin(self, records: list[dict[str, Any]], *, fresh: bool) -> None:
        self.fresh = fresh
        self.log_records.extend(records)

    async def log(self, record: dict[str, Any]) -> None:
        self.log_records.append(record)

    async def sidecar(self, records: list[dict[str, Any]]) -> None:
        self.sidecar_records.extend(records)

    async def save_unit(self, piece_id: str, unit: dict[str, Any]) -> None:
        self.units[piece_id] = unit
        self.saved.append(piece_id)

    async def finish(
        self, source_file: bytes, trace: bytes, parts: tuple[bytes, ...] | None = None
    ) -> list[str]:
        self.files["source"] = source_file
        self.files["trace"] = trace
        self.parts = parts  # a document's files after the first (`pipeline/parts.py`)
        return []

    async def record(self, inputs: dict[str, Any], previous_output: str | None) -> None:
        self.recorded = (inputs, previous_output)

    def attempts_log_exists(self) -> bool:
        return True

    def attempts(self) -> list[dict[str, Any]]:
        return [r for r in self.log_records if r["type"] == "attempt"]


class Canned:
    """A model that answers from a function of the request, counting calls."""

    def __init__(self, respond: Callable[[CompletionRequest], Completion]) -> None:
        self.respond = respond
        self.requests: list[CompletionRequest] = []
        self.seq = 0

    async def complete(self, request: CompletionRequest) -> Completion:
        self.requests.append(request)
        await asyncio.sleep(0)
        return self.respond(request)

    async def next_seq(self) -> int:
        self.seq += 1
        return self.seq


def ok(text: str, reason: str = "stop") -> Completion:
    return Completion("answer", text=text, finish_reason=reason, input_tokens=10, output_tokens=5)


def run(
    model: Canned, recorder: MemoryRecorder, text: str = TEXT, **overrides: Any
) -> SegmentOutcome:
    job = SegmentJob(0, "docs/ray.md", text.encode(), "docs/ray.md", ())
    return asyncio.run(
        extract_segment(
            job, settings(**overrides), "run1", Model(model.complete, model.next_seq), recorder
        )
    )


def test_a_valid_answer_writes_the_source_file_and_the_report() -> None:
    model = Canned(
        lambda r: ok(answer(("Ray", "runs on", "Kubernetes", 1), ("KubeRay", "manages", "Ray", 2)))
    )
    recorder = MemoryRecorder()
    outcome = run(model, recorder)
    assert outcome.status == "written"
    assert outcome.report == (
        "docs/ray.md: 2 association(s), 0 alias(es), passage → out/docs__ray.md-"
        "560df6ec26361874.jsonl"
    )
    parsed = parse_source_file(recorder.files["source"])
    assert [a.triple for a in parsed.associations] == [
        ("Ray", "runs on", "Kubernetes"),
        ("KubeRay", "manages", "Ray"),
    ]
    assert parsed.passage is not None and parsed.passage.text == TEXT
    assert recorder.fresh is True and len(recorder.saved) == 1
    assert [u.label for u in outcome.contribution.labels] == ["runs on", "manages"]


def test_malformed_answer_earns_one_corrective_turn_replaying_it() -> None:
    answers = iter(["I think the facts are…", answer(("Ray", "runs on", "Kubernetes", 1))])
    model = Canned(lambda r: ok(next(answers)))
    recorder = MemoryRecorder()
    outcome = run(model, recorder)
    assert outcome.status == "written"
    first, second = recorder.attempts()
    assert (first["state"], second["state"]) == ("stop_malformed", "stop_valid")
    assert second["corrects"] == {"run_id": "run1", "attempt_seq": 1}
    roles = [m["role"] for m in model.requests[1].messages]
    assert roles == ["system", "user", "assistant", "user"]
    assert model.requests[1].messages[2]["content"] == "I think the facts are…"
    assert second["messages"][0] == {
        "role": "system",
        "system_sha256": first["messages"][0]["system_sha256"],
    }


def test_invalid_items_get_a_path_addressed_ask_and_fail_past_the_budget() -> None:
    bad = json.dumps(
        {
            "associations": [
                {"subject": "Ray", "label": "runs on", "object": "Kubernetes", "weight": "strong"}
            ],
            "aliases": [],
        }
    )
    model = Canned(lambda r: ok(bad))
    recorder = MemoryRecorder()
    outcome = run(model, recorder)
    assert outcome.status == "failed"
    assert len(model.requests) == 2
    assert (
        'associations[0].weight: expected finite non-zero number, got string "strong"'
        in (model.requests[1].messages[-1]["content"])
    )
    line = outcome.notes[-1]
    assert line.startswith("taguru: extract: docs/ray.md: chunk 1/1: piece ")
    assert "(paragraphs 0–2, " in line
    assert "the answer left 1 invalid item(s) uncorrected: associations[0].weight" in line
    assert " — records: out/.extract-trace/docs__ray.md-" in line
    assert "files" not in recorder.files


def test_max_attempts_bounds_the_corrective_turns() -> None:
    model = Canned(lambda r: ok("not json"))
    outcome = run(model, MemoryRecorder(), max_attempts=4)
    assert len(model.requests) == 4 and outcome.status == "failed"
    assert "the model would not produce the JSON object" in outcome.notes[-1]


def test_a_refusal_is_terminal() -> None:
    model = Canned(lambda r: Completion("answer", text=None, finish_reason="content_filter"))
    outcome = run(model, MemoryRecorder(), max_attempts=5)
    assert len(model.requests) == 1
    assert "refused" in outcome.notes[-1] and "terminal" in outcome.notes[-1]


def test_an_empty_answer_earns_one_correction_only() -> None:
    model = Canned(lambda r: ok(""))
    recorder = MemoryRecorder()
    outcome = run(model, recorder, max_attempts=5)
    assert len(model.requests) == 2 and outcome.status == "failed"
    assert [a["state"] for a in recorder.attempts()] == ["empty", "empty"]


def test_transport_failure_fails_the_segment_with_its_reason() -> None:
    model = Canned(
        lambda r: Completion(
            "transport", error="HTTP 500: boom (after 4 tries)", transport_retries=3
        )
    )
    outcome = run(model, MemoryRecorder())
    piece = outcome.notes[-1].split(": piece ", 1)[1][:12]
    log = "out/.extract-trace/docs__ray.md-560df6ec26361874.attempts.jsonl"
    assert outcome.notes[-1].endswith(
        f"HTTP 500: boom (after 4 tries) — records: {log} "
        f"(taguru-ray inspect {log} --piece {piece})"
    )


LONG = "\n\n".join(f"Paragraph {i} mentions Alpha{i} and Beta{i}." + " x" * 150 for i in range(12))


def respond_by_labels(request: CompletionRequest) -> Completion:
    user = request.messages[1]["content"]
    triples = []
    for line in user.split("\n\n")[1:]:
        index = int(line[1 : line.index("]")])
        triples.append((f"Alpha{index}", "mentions", f"Beta{index}", index))
        triples.append(("Alpha0", "mentions", "Beta0", 0))  # a repeat across chunks
    return ok(answer(*triples))


def test_parallel_chunks_write_the_same_bytes_as_sequential_ones() -> None:
    outputs = []
    for parallel in (1, 4):
        recorder = MemoryRecorder()
        outcome = run(
            Canned(respond_by_labels), recorder, text=LONG, parallel=parallel, chunk_bytes=1024
        )
        assert outcome.status == "written"
        outputs.append(recorder.files["source"])
    assert outputs[0] == outputs[1]
    parsed = parse_source_file(outputs[0])
    assert [a.paragraph for a in parsed.associations] == list(range(12))


def test_checkpointed_units_are_reused_without_asking_again() -> None:
    first = MemoryRecorder()
    run(Canned(respond_by_labels), first, text=LONG, chunk_bytes=1024)
    units = dict(list(first.units.items())[:2])
    resumed = MemoryRecorder(units=units)
    model = Canned(respond_by_labels)
    outcome = run(model, resumed, text=LONG, chunk_bytes=1024)
    assert len(model.requests) == len(first.units) - 2
    assert resumed.fresh is False
    assert resumed.files["source"] == first.files["source"]
    assert outcome.report is not None and "duplicate(s) folded" in outcome.report


def test_trace_records_follow_the_contract_order() -> None:
    recorder = MemoryRecorder()
    run(Canned(respond_by_labels), recorder, text=LONG, chunk_bytes=1024)
    types = [json.loads(line)["type"] for line in recorder.files["trace"].splitlines()]
    order = ["segment", "steering", "chunk", "piece", "item", "loss", "paragraph"]
    assert types[0] == "segment" and types[1] == "steering"
    assert [t for i, t in enumerate(types) if i == 0 or types[i - 1] != t] == order


def answer_with(triples: list[tuple[str, str, str, int]], aliases: list[tuple[str, str]]) -> str:
    return json.dumps(
        {
            "associations": [
                {"subject": s, "label": label, "object": o, "paragraph": p}
                for s, label, o, p in triples
            ],
            "aliases": [{"alias": a, "canonical": c, "kind": "concept"} for a, c in aliases],
        }
    )


TRIPLES = [("Ray", "runs on", "Kubernetes", 1), ("KubeRay", "manages", "Ray", 2)]


def test_a_shadowing_alias_earns_one_cross_chunk_turn_and_its_correction_is_adopted() -> None:
    answers = iter(
        [
            answer_with(TRIPLES, [("Kubernetes", "Ray")]),
            answer_with(TRIPLES, [("K8s", "Kubernetes")]),
        ]
    )
    model = Canned(lambda r: ok(next(answers)))
    recorder = MemoryRecorder()
    outcome = run(model, recorder)
    assert outcome.status == "written"
    _, second = recorder.attempts()
    assert second["stage"] == "cross_chunk" and second["corrects"] == {
        "run_id": "run1",
        "attempt_seq": 1,
    }
    assert (
        "aliases[0].alias: names something the associations already contain"
        in (second["messages"][-1]["content"])
    )
    parsed = parse_source_file(recorder.files["source"])
    assert [(a.alias, a.canonical) for a in parsed.aliases] == [("K8s", "Kubernetes")]
    trace = [json.loads(line) for line in recorder.files["trace"].splitlines()]
    [piece] = [r for r in trace if r["type"] == "piece"]
    assert piece["attempt"] == {"run_id": "run1", "attempt_seq": 2}
    assert recorder.units[piece["piece_id"]]["attempt"]["attempt_seq"] == 2


def test_an_alias_issue_left_standing_is_removed_and_accounted() -> None:
    model = Canned(lambda r: ok(answer_with(TRIPLES, [("K8s", "Kubernetes"), ("K8s", "Ray")])))
    recorder = MemoryRecorder()
    outcome = run(model, recorder)
    assert outcome.status == "written" and len(model.requests) == 2
    assert outcome.report is not None and "1 item(s) removed (mechanical validation)" in (
        outcome.report
    )
    assert outcome.notes == [
        "taguru: extract: docs/ray.md: removed: aliases[1]: conflicts with an earlier alias "
        'mapping "K8s" to "Kubernetes" — still so after the corrective turn; removed'
    ]
    losses = [
        json.loads(line)
        for line in recorder.files["trace"].splitlines()
        if json.loads(line)["type"] == "loss"
    ]
    assert [(x["reason"], x["path"], x["raw"]["canonical"]) for x in losses] == [
        ("removed", "aliases[1]", "Ray")
    ]


def test_mechanical_removals_are_accepted_without_a_turn_and_named() -> None:
    model = Canned(
        lambda r: ok(
            answer_with(
                [*TRIPLES, ("Ray", "uses", "MongoDB", 1), ("Ray", "is", "", 1)],
                [("GCS", "存在しない")],
            )
        )
    )
    recorder = MemoryRecorder()
    outcome = run(model, recorder)
    assert len(model.requests) == 1 and outcome.status == "written"
    assert [line.split("removed: ")[1] for line in outcome.notes] == [
        'associations[2]: object "MongoDB" does not appear in the segment text',
        "associations[3]: object empty",
        'aliases[0]: canonical "存在しない" names nothing the associations contain',
    ]
    [attempt] = recorder.attempts()
    assert attempt["removed_items"] == [
        'associations[2]: object "MongoDB" does not appear in the segment text',
        "associations[3]: object empty",
    ]
    assert outcome.counts["removed"] == 3


def test_an_alias_that_rewires_an_earlier_segments_name_is_pruned() -> None:
    model = Canned(lambda r: ok(answer_with(TRIPLES, [("K8s", "Kubernetes")])))
    recorder = MemoryRecorder()

    turns: list[Proposal] = []

    async def commit(proposal: Proposal) -> Verdict | None:
        turns.append(proposal)
        return judge(proposal, {("concept", "K8s"): "Kubernetes Engine"})

    job = SegmentJob(3, "docs/ray.md", TEXT.encode(), "docs/ray.md", ())
    outcome = asyncio.run(
        extract_segment(
            job, settings(), "run1", Model(model.complete, model.next_seq, commit), recorder
        )
    )
    assert outcome.counts["removed"] == 1
    assert "already names a concept an earlier segment" in outcome.notes[0]
    assert [item.raw["alias"] for item in turns[0].aliases] == ["K8s"]
    assert outcome.contribution.concept_aliases == ()  # what it settles: the file's truth


def test_lossy_runs_still_prune_an_alias_that_rewires_an_earlier_name() -> None:
    model = Canned(lambda r: ok(answer_with(TRIPLES, [("K8s", "Kubernetes")])))

    async def commit(proposal: Proposal) -> Verdict | None:
        return judge(proposal, {("concept", "K8s"): "Kubernetes Engine"})

    job = SegmentJob(3, "docs/ray.md", TEXT.encode(), "docs/ray.md", ())
    outcome = asyncio.run(
        extract_segment(
            job,
            settings(lossy=True),
            "run1",
            Model(model.complete, model.next_seq, commit),
            MemoryRecorder(),
        )
    )
    assert outcome.status == "written" and outcome.counts["removed"] == 1


def test_a_segment_whose_turn_never_comes_is_stopped_with_its_units_kept() -> None:
    model = Canned(lambda r: ok(answer_with(TRIPLES, [])))
    recorder = MemoryRecorder()

    async def commit(proposal: Proposal) -> Verdict | None:
        return None  # an earlier segment was stopped: nothing after it is written

    job = SegmentJob(3, "docs/ray.md", TEXT.encode(), "docs/ray.md", ())
    outcome = asyncio.run(
        extract_segment(
            job, settings(), "run1", Model(model.complete, model.next_seq, commit), recorder
        )
    )
    assert outcome.status == "interrupted"
    assert "source" not in recorder.files and len(recorder.units) == 1


def test_lossy_drops_and_counts_without_corrective_turns() -> None:
    bad = json.dumps(
        {
            "associations": [
                {"subject": "Ray", "label": "runs on", "object": "Kubernetes", "weight": "strong"},
                {"subject": "KubeRay", "label": "manages", "object": "Ray"},
            ],
            "aliases": [{"alias": "KubeRay", "canonical": "Ray", "kind": "concept"}],
        }
    )
    model = Canned(lambda r: ok(bad))
    recorder = MemoryRecorder()
    outcome = run(model, recorder, lossy=True)
    assert len(model.requests) == 1 and outcome.status == "written"
    assert outcome.report is not None and "2 item(s) dropped (--lossy)" in outcome.report
    assert outcome.counts["removed"] == 0
    trace = [json.loads(line) for line in recorder.files["trace"].splitlines()]
    losses = [(x["reason"], x.get("path")) for x in trace if x["type"] == "loss"]
    assert losses == [("dropped", "associations[0]"), ("dropped", None)]


def test_loss_rate_and_paragraph_coverage_fold_from_the_trace_alone() -> None:
    model = Canned(
        lambda r: ok(
            answer_with(
                [*TRIPLES, ("Ray", "runs on", "Kubernetes", 1), ("Ray", "uses", "MongoDB", 1)], []
            )
        )
    )
    recorder = MemoryRecorder()
    run(model, recorder)
    trace = [json.loads(line) for line in recorder.files["trace"].splitlines()]
    kept = sum(1 for r in trace if r["type"] == "item")
    lost = sum(1 for r in trace if r["type"] == "loss")
    assert (kept, lost) == (2, 2)  # one duplicate folded, one fabrication removed
    assert lost / (kept + lost) == 0.5
    paragraphs = [r for r in trace if r["type"] == "paragraph"]
    covered = sum(r["bytes"] for r in paragraphs if r["covered"])
    total = sum(r["bytes"] for r in paragraphs)
    assert [r["covered"] for r in paragraphs] == [False, True, True]
    assert covered / total == (
        len("Ray runs on Kubernetes.") + len("KubeRay manages Ray clusters.")
    ) / len(TEXT.replace("\n\n", ""))
    assert [r["text"] for r in paragraphs if not r["covered"]] == ["# Ray"]


def test_the_passage_is_the_segment_text_byte_for_byte() -> None:
    """Blank lines of any length, a trailing newline, CRLFs: the reference's passage."""
    text = "# Ray\r\n\r\n\r\nRay runs on Kubernetes.  \n\n \nKubeRay manages Ray clusters.\n"
    recorder = MemoryRecorder()
    model = Canned(lambda r: ok(answer(("Ray", "runs on", "Kubernetes", 1))))
    assert run(model, recorder, text).status == "written"
    assert parse_source_file(recorder.files["source"]).passage.text == text  # type: ignore[union-attr]
