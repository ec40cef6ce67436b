"""How much one model's extraction varied from run to run (BENCHMARK.md §2.5).

Model scope only: a cell is one run, so a cross-run value means nothing
there. A segment is *completed* in a run when its doc row has a batch
(written and readable), so a segment that failed never reads as instability
— `document.written_rate` counts those. The runs considered are every run
index the model's manifest cells have, so an empty run still gives the
`run.*` distributions a 0 sample.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from taguru_ray.benchmark.compare.identity import (
    DEFAULT_MATCHING,
    AliasMap,
    AssocKey,
    Matching,
    Observation,
    Presence,
    attribution_varies,
    jaccard,
    keyed_associations,
    normalize_term,
    polarity_varies,
    weight_varies,
)
from taguru_ray.benchmark.compare.load import DocRow
from taguru_ray.measure import Distribution, MetricsMap, count, ratio

# The twelve names this module emits, pinned (a test holds them to the lexicon).
STABILITY_METRICS = (
    "stability.run_pair_jaccard",
    "stability.keys_distinct",
    "stability.keys_in_all_runs_ratio",
    "stability.keys_in_single_run_ratio",
    "stability.key_presence_ratio",
    "stability.polarity_variation_ratio",
    "stability.weight_variation_ratio",
    "stability.attribution_variation_ratio",
    "stability.alias_canonical_variation_ratio",
    "run.associations_total",
    "run.elapsed_seconds_total",
    "run.documents_written",
)


@dataclass
class KeyedRuns:
    """One model's completed batches keyed by identity (also what differences reads)."""

    presence: dict[AssocKey, Presence] = field(default_factory=dict)
    keys: dict[tuple[int, str], set[AssocKey]] = field(default_factory=dict)
    completed: dict[str, set[int]] = field(default_factory=dict)  # segment → runs
    # (segment, alias kind, normalized alias) → run → resolved canonical
    aliases: dict[tuple[str, str, str], dict[int, str]] = field(default_factory=dict)
    batches: int = 0


def key_runs(docs: Iterable[DocRow], matching: Matching = DEFAULT_MATCHING) -> KeyedRuns:
    """Key every completed batch of one model's doc rows."""
    keyed = KeyedRuns()
    for doc in docs:
        if doc.batch is None:
            continue
        keyed.batches += 1
        keyed.completed.setdefault(doc.document_id, set()).add(doc.run_index)
        aliases = AliasMap.from_lines(doc.batch.aliases, matching)
        found: dict[AssocKey, Observation] = keyed_associations(
            doc.document_id, doc.batch.associations, aliases, matching
        )
        keyed.keys.setdefault((doc.run_index, doc.document_id), set()).update(found)
        for key, observation in found.items():
            keyed.presence.setdefault(key, Presence()).add(doc.run_index, observation)
        for line in doc.batch.aliases:
            spelling = normalize_term(line.alias, matching)
            by_run = keyed.aliases.setdefault((doc.document_id, line.kind, spelling), {})
            by_run[doc.run_index] = aliases.resolve(line.kind, spelling)
    return keyed


def run_totals(run_indexes: Iterable[int], docs: Sequence[DocRow]) -> MetricsMap:
    """run.*: one sample per run, 0 for a run with nothing."""
    associations = dict.fromkeys(run_indexes, 0)
    elapsed = dict.fromkeys(associations, 0.0)
    written = dict.fromkeys(associations, 0)
    for doc in docs:
        associations[doc.run_index] = associations.get(doc.run_index, 0) + (doc.associations or 0)
        elapsed[doc.run_index] = elapsed.get(doc.run_index, 0.0) + doc.elapsed_seconds_sum
        written[doc.run_index] = written.get(doc.run_index, 0) + (doc.outcome == "written")
    return {
        "run.associations_total": Distribution.of(associations[r] for r in sorted(associations)),
        "run.elapsed_seconds_total": Distribution.of(elapsed[r] for r in sorted(elapsed)),
        "run.documents_written": Distribution.of(written[r] for r in sorted(written)),
    }


def stability_metrics(
    run_indexes: set[int], docs: Sequence[DocRow], matching: Matching = DEFAULT_MATCHING
) -> MetricsMap:
    """The twelve stability and per-run metrics of one model."""
    metrics = run_totals(run_indexes, docs)
    keyed = key_runs(docs, matching)
    metrics["stability.run_pair_jaccard"] = Distribution.of(_pair_jaccards(run_indexes, keyed))
    metrics["stability.keys_distinct"] = count(
        len(keyed.presence) if keyed.batches else None, keyed.batches
    )
    eligible = in_all = in_single = 0
    shares: list[float] = []
    varying = polarity = weight = attribution = 0
    for key, presence in keyed.presence.items():
        completed_runs = len(keyed.completed.get(key.document_id, ()))
        present = presence.n_present
        # A key of a segment completed once could only ever be "in all runs".
        if completed_runs >= 2:
            eligible += 1
            in_all += present == completed_runs
            in_single += present == 1
            shares.append(present / completed_runs)
        # A key seen in one run has nothing to vary against.
        if present >= 2:
            varying += 1
            polarity += polarity_varies(presence)
            weight += weight_varies(presence, matching.weight_tolerance)
            attribution += attribution_varies(presence)
    metrics["stability.keys_in_all_runs_ratio"] = ratio(in_all, eligible)
    metrics["stability.keys_in_single_run_ratio"] = ratio(in_single, eligible)
    metrics["stability.key_presence_ratio"] = Distribution.of(shares)
    metrics["stability.polarity_variation_ratio"] = ratio(polarity, varying)
    metrics["stability.weight_variation_ratio"] = ratio(weight, varying)
    metrics["stability.attribution_variation_ratio"] = ratio(attribution, varying)
    declared = [by_run for by_run in keyed.aliases.values() if len(by_run) >= 2]
    metrics["stability.alias_canonical_variation_ratio"] = ratio(
        sum(len(set(by_run.values())) > 1 for by_run in declared), len(declared)
    )
    return metrics


def _pair_jaccards(run_indexes: set[int], keyed: KeyedRuns) -> list[float]:
    """Per unordered run pair, over the segments both runs completed."""
    runs = sorted(run_indexes)
    samples: list[float] = []
    for i, run_a in enumerate(runs):
        for run_b in runs[i + 1 :]:
            keys_a: set[AssocKey] = set()
            keys_b: set[AssocKey] = set()
            for segment_id, completed_in in sorted(keyed.completed.items()):
                if run_a in completed_in and run_b in completed_in:
                    keys_a |= keyed.keys.get((run_a, segment_id), set())
                    keys_b |= keyed.keys.get((run_b, segment_id), set())
            score = jaccard(keys_a, keys_b)
            if score is not None:
                samples.append(score)
    return samples
