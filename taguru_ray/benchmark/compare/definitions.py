"""What every metric means, shipped inside measurements.json (BENCHMARK.md §2.3–2.5).

One `Definition` per emitted metric name: unit, statistic (the shape at
cell/model scope), scopes, a description, where the number comes from, and
the known caveat. A reader of the artifact needs nothing else to interpret a
value; the CSV's `unit` column is read from here.
"""

from __future__ import annotations

from collections.abc import Iterable

from taguru_ray.benchmark.compare.metrics import ATTEMPT_STATES
from taguru_ray.measure import Definition

CMD = ("cell", "model", "document")
CM = ("cell", "model")
M = ("model",)
CMG = ("cell", "model", "gpu")

ATTEMPT_SOURCE = "runs/*.jsonl kind=attempt"
END_SOURCE = "runs/*.jsonl kind=segment (or document) phase=end"
BATCH_SOURCE = "cells/** batch file named by the end record's batch_path"
SATURATION_SOURCE = "manifest cells[].saturation"
STEADY = "steady state: the span between the 10th and 90th percentile completion times"
COUNT_CAVEAT = (
    "At document scope a single count {value, n: 0 or 1}: a segment not written, or whose "
    "batch could not be read, is {null, 0}. At cell and model scope the distribution of that "
    "count over the scope's segments."
)


def _attempts() -> dict[str, Definition]:
    tokens_caveat = (
        "Null for timeout and transport attempts, which received no response; they are left "
        "out of n, not counted as 0."
    )
    found = {
        "latency.attempt_seconds": Definition(
            "second",
            "distribution",
            CMD,
            "Wall time of one completion call.",
            f"{ATTEMPT_SOURCE} .elapsed_seconds",
            "Timeouts and transport failures are included; their time is when the call gave up.",
        ),
        "latency.chunk_seconds": Definition(
            "second",
            "distribution",
            CMD,
            "Time spent extracting one chunk: its attempts' elapsed seconds summed.",
            f"{ATTEMPT_SOURCE} .elapsed_seconds summed per (cell, segment, chunk_index), "
            "stage cross_chunk left out",
            "A sum of attempts, not wall time: under parallelism it can exceed the run's span. "
            "Cross-chunk correction is a later pass and is not counted.",
        ),
        "throughput.output_tokens_per_second": Definition(
            "token/second",
            "distribution",
            CMD,
            "One attempt's output tokens divided by its elapsed seconds.",
            f"{ATTEMPT_SOURCE} .provider_metadata.output_tokens / .elapsed_seconds",
            "The denominator is wall time including network and queueing, not decode time "
            "alone. Attempts without output_tokens or with no elapsed time are left out.",
        ),
    }
    for direction in ("input", "output", "total"):
        found[f"tokens.{direction}_per_attempt"] = Definition(
            "token",
            "distribution",
            CMD,
            f"The {direction} tokens the provider reported for one completion call.",
            f"{ATTEMPT_SOURCE} .provider_metadata.{direction}_tokens",
            tokens_caveat,
        )
    return found


def _segments() -> dict[str, Definition]:
    found = {
        "latency.document_wall_seconds": Definition(
            "second",
            "distribution",
            CMD,
            "A segment's span from its earliest start record to its last end record.",
            "runs/*.jsonl kind=segment (or document) .ts at phase=start and phase=end",
            "A segment with no end (interrupted) or an end before its start is no sample; "
            "at document scope a distribution of 0 or 1 sample.",
        ),
        "latency.seconds_per_association": Definition(
            "second",
            "distribution",
            CMD,
            "A segment's summed attempt seconds divided by the associations it produced.",
            f"{ATTEMPT_SOURCE} .elapsed_seconds summed per segment / end record .associations",
            "Segments with no or zero associations are left out rather than divided by zero.",
        ),
    }
    end_units = {
        "associations": "association", "concepts": "alias", "labels": "alias",
        "questions": "question", "duplicates": "association", "dropped": "record",
    }  # fmt: skip
    for name, unit in end_units.items():
        found[f"extraction.{name}"] = Definition(
            unit,
            "distribution",
            CMD,
            f"The {name} count extract reported for one written segment.",
            f"{END_SOURCE} .{name}",
            COUNT_CAVEAT,
        )
    batch = {
        "weight_positive": ("association", "Association lines with a weight above 0."),
        "weight_negative": ("association", "Association lines with a weight below 0."),
        "subjects_distinct": ("subject", "Distinct subject spellings, as written."),
        "relations_distinct": ("relation", "Distinct label spellings, as written."),
        "alias_orphans": (
            "alias",
            "Alias lines whose canonical is no subject or object (concept) or no label "
            "(label) of the batch.",
        ),
        "paragraph_out_of_range": (
            "record",
            "Association and question lines whose paragraph is at or past the segment's "
            "paragraph_count.",
        ),
        "batch_lines_invalid": (
            "line",
            "Lines that are not JSON or match none of the batch line shapes.",
        ),
    }
    for name, (unit, description) in batch.items():
        found[f"extraction.{name}"] = Definition(
            unit,
            "distribution",
            CMD,
            description,
            BATCH_SOURCE,
            COUNT_CAVEAT + " A weight of exactly 0 counts as neither sign."
            if name.startswith("weight")
            else COUNT_CAVEAT,
        )
    found["extraction.paragraph_attributed_rate"] = Definition(
        "ratio",
        "ratio",
        CMD,
        "Share of association lines that carry a paragraph.",
        BATCH_SOURCE,
        "--no-passage makes this structurally 0; compare it only between runs with the same "
        "passage setting.",
    )
    found["extraction.relation_reuse_ratio"] = Definition(
        "ratio",
        "ratio",
        CMD,
        "Association lines minus each segment's distinct labels, over association lines: how "
        "often a label is used again within a segment.",
        BATCH_SOURCE,
        "Saturates at 0.",
    )
    found["extraction.associations_per_1k_input_tokens"] = Definition(
        "association/kilotoken",
        "rate",
        CMD,
        "Associations per 1,000 input tokens, pooled over segments that report both.",
        f"{END_SOURCE} .associations summed / ({ATTEMPT_SOURCE} "
        ".provider_metadata.input_tokens summed / 1000)",
        "The tokens include every retry: this is the cost of what was produced, not per-call "
        "efficiency.",
    )
    return found


def _rates(finish_reasons: Iterable[str]) -> dict[str, Definition]:
    state_caveats = {
        "stop_malformed": "Conflates a JSON syntax failure with a validation rejection; "
        "validation_issues != null (attempt.validation_rejected_rate) separates them.",
        "length_limited": "The legacy extraction path never reports this state: it reports "
        "stop_valid with length_limited: true. attempt.length_limited_rate reads the flag.",
        "refusal": "The legacy extraction path folds a refusal into stop_valid.",
    }
    found = {
        f"attempt.state_rate.{state}": Definition(
            "ratio",
            "ratio",
            CM,
            f"Share of attempts whose state was {state}.",
            f"{ATTEMPT_SOURCE} .state",
            state_caveats.get(state),
        )
        for state in ATTEMPT_STATES
    }
    flags = {
        "length_limited_rate": ("Share of attempts flagged length_limited.", ".length_limited"),
        "retry_rate": ("Share of attempts numbered above 1.", ".attempt > 1"),
        "parse_error_rate": ("Share of attempts with a parse_error.", ".parse_error != null"),
        "validation_rejected_rate": (
            "Share of attempts whose answer failed validation.",
            ".validation_issues != null",
        ),
        "provider_metadata_missing_rate": (
            "Share of attempts without provider metadata or without a finish_reason.",
            ".provider_metadata == null or .provider_metadata.finish_reason missing",
        ),
    }
    for name, (description, field) in flags.items():
        found[f"attempt.{name}"] = Definition(
            "ratio", "ratio", CM, description, f"{ATTEMPT_SOURCE} {field}"
        )
    for reason in sorted(finish_reasons):
        found[f"attempt.finish_reason_rate.{reason}"] = Definition(
            "ratio",
            "ratio",
            CM,
            f"Share of attempts whose finish_reason was {reason}.",
            f"{ATTEMPT_SOURCE} .provider_metadata.finish_reason",
        )
    for outcome in ("written", "failed"):
        found[f"document.{outcome}_rate"] = Definition(
            "ratio",
            "ratio",
            CM,
            f"Share of the scope's segments whose end outcome is {outcome}.",
            f"{END_SOURCE} .outcome",
            "A segment with a start and no end (interrupted) counts in n only.",
        )
    found["cell.complete_rate"] = Definition(
        "ratio",
        "ratio",
        M,
        "Share of the model's cells whose outcome is complete.",
        "manifest cells[].outcome",
    )
    return found


def _stability() -> dict[str, Definition]:
    keyed = "associations keyed by benchmark::identity (see matching)"
    completed = "Only segments completed (written, batch readable) in 2 or more runs count."
    varied = "Over keys observed in 2 or more runs."
    rows = {
        "run.associations_total": ("association", "distribution",
            "Per run, the associations its end records report, summed.", END_SOURCE, None),
        "run.elapsed_seconds_total": ("second", "distribution",
            "Per run, the attempt seconds of its segments, summed.", ATTEMPT_SOURCE, None),
        "run.documents_written": ("document", "distribution",
            "Per run, the segments written.", END_SOURCE, None),
        "stability.run_pair_jaccard": ("ratio", "distribution",
            "Per pair of runs, |A∩B| / |A∪B| of their key sets over the segments both "
            "completed.", keyed, "A pair with no shared completed segment adds no sample."),
        "stability.keys_distinct": ("association", "count",
            "Distinct keys over every completed batch; n is the number of batches.", keyed, None),
        "stability.keys_in_all_runs_ratio": ("ratio", "ratio",
            "Share of keys present in every run that completed their segment.", keyed,
            completed),
        "stability.keys_in_single_run_ratio": ("ratio", "ratio",
            "Share of keys present in exactly one run.", keyed, completed),
        "stability.key_presence_ratio": ("ratio", "distribution",
            "Per key, the runs it is present in over the runs that completed its segment.",
            keyed, completed),
        "stability.polarity_variation_ratio": ("ratio", "ratio",
            "Share of keys whose weights carry more than one sign (0 is a sign of its own).",
            keyed, varied),
        "stability.weight_variation_ratio": ("ratio", "ratio",
            "Share of keys whose weights spread by more than the weight tolerance.", keyed,
            varied),
        "stability.attribution_variation_ratio": ("ratio", "ratio",
            "Share of keys whose paragraph sets differ between runs.", keyed,
            varied + " --no-passage makes this structurally 0."),
        "stability.alias_canonical_variation_ratio": ("ratio", "ratio",
            "Share of (segment, alias kind, alias) declared in 2 or more runs whose resolved "
            "canonical differs between them.", "batch alias lines, resolved batch-locally",
            "Self-mapping aliases count; they resolve to themselves."),
    }  # fmt: skip
    return {
        name: Definition(unit, statistic, M, description, source, caveat)
        for name, (unit, statistic, description, source, caveat) in rows.items()
    }


def _saturation() -> dict[str, Definition]:
    rows = {
        "saturation.completions_per_second": ("completion/second",
            "Completions per second at saturation.", STEADY),
        "saturation.input_tokens_per_second": ("token/second",
            "Input tokens per second at saturation.", STEADY),
        "saturation.output_tokens_per_second": ("token/second",
            "Output tokens per second at saturation.", STEADY),
        "saturation.latency_p50_seconds": ("second",
            "Median completion latency at saturation.", STEADY),
        "saturation.latency_p90_seconds": ("second",
            "90th percentile completion latency at saturation.", STEADY),
        "saturation.latency_p99_seconds": ("second",
            "99th percentile completion latency at saturation.", STEADY),
        "saturation.inflight_settled": ("request",
            "The in-flight limit the cell settled on.",
            "With a fixed max_inflight this is that number; with auto, the adaptive limit's "
            "settled value."),
        "saturation.inflight_observed_mean": ("request",
            "Requests on the wire, on average over the steady state.",
            "What the run reached, beside the limit it settled on (ADR 0048)."),
        "saturation.inflight_observed_peak": ("request",
            "The most requests on the wire at once in the steady state.", STEADY),
        "saturation.client_cpu_share": ("share",
            "CPU taguru-ray's own processes used over the steady state, as a share of the "
            "cores they had.",
            "Near 1 the client, not the endpoint, held the cell (bound: client)."),
        "saturation.http_429": ("response", "HTTP 429 answers the cell received.", None),
        "saturation.retries": ("attempt", "Retried completion calls in the cell.", None),
        "cost.per_1k_segments": ("dollar/kilosegment",
            "GPU cost of 1,000 segments at the cell's steady rate.",
            "Null unless the model names price_per_gpu_hour and gpu_count; GPU time only."),
        "cost.per_1m_output_tokens": ("dollar/megatoken",
            "GPU cost of one million output tokens at the cell's steady rate.",
            "Null unless the model names price_per_gpu_hour and gpu_count; GPU time only."),
    }  # fmt: skip
    found = {
        name: Definition(
            unit,
            "distribution",
            CMG,
            description + " One sample per cell.",
            SATURATION_SOURCE,
            caveat,
        )
        for name, (unit, description, caveat) in rows.items()
    }
    found["saturation.bound"] = Definition(
        "cell",
        "tally",
        CMG,
        "How many cells each bound held: what kept the cell's in-flight level where it was "
        "— endpoint, limit, window, client (CPU), rate, budget or corpus (ADR 0048). A plain "
        "description of the run, never a verdict on the model or the GPU.",
        f"{SATURATION_SOURCE}.bound",
        "client, window, limit and corpus are the client's side: such a cell's throughput "
        "measures taguru-ray, not the endpoint.",
    )
    return found


def build_definitions(finish_reasons: Iterable[str]) -> dict[str, Definition]:
    """Every metric's definition, finish-reason rates only for reasons observed."""
    found = _attempts() | _segments() | _rates(finish_reasons) | _stability() | _saturation()
    return dict(sorted(found.items()))
