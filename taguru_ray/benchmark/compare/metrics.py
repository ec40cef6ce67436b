"""The metric catalog of BENCHMARK.md §2.4: attempts, segments, batches.

Cell and model scope pool over their attempts and doc rows (a Distribution
over segments, one sample each); document scope is one (cell, segment) and
shows the count-like metrics as a `Count` instead. Stability (model scope
only) is `stability.py`; the saturation block `saturation.py`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from taguru_ray.benchmark.compare.batch import BatchStats
from taguru_ray.benchmark.compare.load import END_COUNTS, AttemptRow, DocRow
from taguru_ray.measure import Distribution, MetricsMap, count, ratio

ATTEMPT_STATES = (
    "stop_valid",
    "stop_malformed",
    "length_limited",
    "empty",
    "refusal",
    "timeout",
    "transport",
)

# extraction.<name> from the batch, and how to read it off the stats.
BATCH_COUNTS: dict[str, Callable[[BatchStats], int]] = {
    "weight_positive": lambda b: b.weight_positive,
    "weight_negative": lambda b: b.weight_negative,
    "subjects_distinct": lambda b: len(b.subjects),
    "relations_distinct": lambda b: len(b.relations),
    "alias_orphans": lambda b: b.alias_orphans,
    "paragraph_out_of_range": lambda b: b.paragraph_out_of_range,
    "batch_lines_invalid": lambda b: b.invalid_lines,
}


def attempt_distributions(attempts: Sequence[AttemptRow]) -> MetricsMap:
    """latency.attempt_seconds, latency.chunk_seconds, throughput and token distributions."""
    return {
        "latency.attempt_seconds": Distribution.of(a.elapsed_seconds for a in attempts),
        "latency.chunk_seconds": chunk_seconds(attempts),
        "throughput.output_tokens_per_second": Distribution.of(
            _tokens_per_second(a) for a in attempts
        ),
        "tokens.input_per_attempt": Distribution.of(a.input_tokens for a in attempts),
        "tokens.output_per_attempt": Distribution.of(a.output_tokens for a in attempts),
        "tokens.total_per_attempt": Distribution.of(a.total_tokens for a in attempts),
    }


def chunk_seconds(attempts: Sequence[AttemptRow]) -> Distribution:
    """One sample per (cell, segment, chunk): its attempts' elapsed summed.

    A retried chunk took all its attempts; cross-chunk correction is a later
    pass over an extracted chunk, not part of extracting it.
    """
    sums: dict[tuple[str, str, int], float] = {}
    for a in attempts:
        if a.stage != "cross_chunk":
            key = (a.cell_id, a.document_id, a.chunk_index)
            sums[key] = sums.get(key, 0.0) + a.elapsed_seconds
    return Distribution.of(sums.values())


def _tokens_per_second(a: AttemptRow) -> float | None:
    if a.output_tokens is None or a.elapsed_seconds <= 0:
        return None
    return a.output_tokens / a.elapsed_seconds


def wall_seconds(doc: DocRow) -> float | None:
    """end − start; a backwards span (a stepped clock) is no sample, zero is one."""
    if doc.start_ts is None or doc.end_ts is None or doc.end_ts < doc.start_ts:
        return None
    return doc.end_ts - doc.start_ts


def seconds_per_association(doc: DocRow) -> float | None:
    associations = doc.associations
    if not associations:
        return None
    return doc.elapsed_seconds_sum / associations


def pooled_document_metrics(docs: Sequence[DocRow]) -> MetricsMap:
    """Cell/model scope: each segment-derived metric as a Distribution over segments."""
    metrics: MetricsMap = {
        "latency.document_wall_seconds": Distribution.of(wall_seconds(d) for d in docs),
        "latency.seconds_per_association": Distribution.of(
            seconds_per_association(d) for d in docs
        ),
    }
    for name in END_COUNTS:
        metrics[f"extraction.{name}"] = Distribution.of(d.counts.get(name) for d in docs)
    for name, read in BATCH_COUNTS.items():
        metrics[f"extraction.{name}"] = Distribution.of(
            read(d.batch) if d.batch is not None else None for d in docs
        )
    metrics.update(pooled_rates(docs))
    return metrics


def pooled_rates(docs: Sequence[DocRow]) -> MetricsMap:
    """paragraph_attributed_rate, relation_reuse_ratio, associations_per_1k_input_tokens.

    Pooled by summing numerators and denominators, which means the same at
    every scope, a single segment included.
    """
    attributed = lines = distinct_labels = 0
    associations = tokens = rate_docs = 0
    for d in docs:
        if d.batch is not None:
            attributed += d.batch.paragraph_attributed
            lines += d.batch.assoc_lines
            distinct_labels += len(d.batch.relations)
        if d.associations is not None and d.input_tokens_sum is not None:
            associations += d.associations
            tokens += d.input_tokens_sum
            rate_docs += 1
    per_1k = None if rate_docs == 0 or tokens == 0 else associations / (tokens / 1000)
    return {
        "extraction.paragraph_attributed_rate": ratio(attributed, lines),
        "extraction.relation_reuse_ratio": ratio(max(lines - distinct_labels, 0), lines),
        "extraction.associations_per_1k_input_tokens": count(per_1k, rate_docs),
    }


def attempt_rates(attempts: Sequence[AttemptRow]) -> MetricsMap:
    """Cell/model scope: shares of all attempts in scope."""
    total = len(attempts)
    metrics: MetricsMap = {}
    for state in ATTEMPT_STATES:
        metrics[f"attempt.state_rate.{state}"] = ratio(
            sum(1 for a in attempts if a.state == state), total
        )
    metrics["attempt.length_limited_rate"] = ratio(sum(a.length_limited for a in attempts), total)
    metrics["attempt.retry_rate"] = ratio(sum(a.attempt > 1 for a in attempts), total)
    metrics["attempt.parse_error_rate"] = ratio(sum(a.parse_error_present for a in attempts), total)
    metrics["attempt.validation_rejected_rate"] = ratio(
        sum(a.validation_rejected for a in attempts), total
    )
    metrics["attempt.provider_metadata_missing_rate"] = ratio(
        sum(not a.provider_metadata_present or a.finish_reason is None for a in attempts), total
    )
    for reason in sorted({a.finish_reason for a in attempts if a.finish_reason is not None}):
        metrics[f"attempt.finish_reason_rate.{reason}"] = ratio(
            sum(a.finish_reason == reason for a in attempts), total
        )
    return metrics


def outcome_rates(docs: Sequence[DocRow]) -> MetricsMap:
    """document.written_rate / failed_rate; a start-only segment counts in n only."""
    total = len(docs)
    return {
        "document.written_rate": ratio(sum(d.outcome == "written" for d in docs), total),
        "document.failed_rate": ratio(sum(d.outcome == "failed" for d in docs), total),
    }


def scope_metrics(attempts: Sequence[AttemptRow], docs: Sequence[DocRow]) -> MetricsMap:
    """Everything cell and model scope share."""
    metrics = attempt_distributions(attempts)
    metrics.update(pooled_document_metrics(docs))
    metrics.update(attempt_rates(attempts))
    metrics.update(outcome_rates(docs))
    return metrics


def document_metrics(doc: DocRow, attempts: Sequence[AttemptRow]) -> MetricsMap:
    """Document scope: one (cell, segment); count-like metrics as a Count of 0 or 1 items."""
    metrics = attempt_distributions(attempts)
    metrics["latency.document_wall_seconds"] = Distribution.of([wall_seconds(doc)])
    metrics["latency.seconds_per_association"] = Distribution.of([seconds_per_association(doc)])
    for name in END_COUNTS:
        value = doc.counts.get(name)
        metrics[f"extraction.{name}"] = count(value, 1)
    for name, read in BATCH_COUNTS.items():
        metrics[f"extraction.{name}"] = count(read(doc.batch) if doc.batch is not None else None, 1)
    metrics.update(pooled_rates([doc]))
    return metrics
