"""An --out's records and knowledge as Arrow tables: what ``taguru-ray inspect`` and
``taguru-ray metrics`` print, and what its source files hold, for a notebook.

    import taguru_ray
    attempts = taguru_ray.inspect("out/")          # one row per completion
    tables = taguru_ray.metrics("out/", prices={"qwen": {"input": 0.1, "output": 0.4}})
    tables.summary.to_pandas()
    facts = taguru_ray.associations("out/")        # one row per association line
    names = taguru_ray.concepts("out/")            # one row per concept, most used first

All read through the tools the CLI verbs use (`taguru_ray.tools`), so a table here
holds what the verb prints, typed: its rows are the verb's rows and `metrics`' tables
are the very tables ``metrics --parquet`` writes; `associations` and `concepts` read
the source files with the import parser, as ``taguru import`` would load them. OUT is
a local path or any fsspec URL (``s3://bucket/run``). A missing OUT is a `UsageError`;
one holding no record, `NoRecords` (no source file: `NoSourceFiles`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import pyarrow as pa

from taguru_ray.errors import UsageError
from taguru_ray.pricing.table import Prices, load_prices
from taguru_ray.store.inputs import read_regular
from taguru_ray.tools.inspect import Filter, attempts_table, build_report
from taguru_ray.tools.knowledge import (
    NoSourceFiles,
    Tally,
    associations_table,
    concepts_table,
    read_out,
)
from taguru_ray.tools.metric_tables import tables
from taguru_ray.tools.metrics import load_ledger
from taguru_ray.tools.metrics_read import NoRecords, collect_urls, report_notes
from taguru_ray.tools.records import attempts_logs
from taguru_ray.tools.request_table import request_table
from taguru_ray.tools.tables import to_arrow

__all__ = [
    "MetricsTables",
    "NoRecords",
    "NoSourceFiles",
    "associations",
    "concepts",
    "inspect",
    "metrics",
]

T = TypeVar("T")


def inspect(out: str, *, texts: bool = False) -> pa.Table:
    """One row per completion, as ``taguru-ray inspect LOG --json`` lists its ``attempts``:
    every attempts log of the --out folder OUT (by segment, in name order), or the one
    log OUT names; within a log, in issue order.

    Columns: ``source`` the segment's source; ``log`` its attempts log; ``run_id`` and
    ``attempt_seq`` which run made the completion, and its number there; ``chunk_index``
    / ``chunk_total`` the chunk and the segment's chunk count; ``piece_id``;
    ``paragraph_first`` / ``paragraph_last`` the piece's ``[i]`` labels; ``piece_bytes``;
    ``stage`` (``extract``, ``gleaning``…); ``attempt`` / ``max_attempts`` its place on
    the ladder; ``state`` how it ended (``stop_valid``, ``stop_malformed``,
    ``length_limited``, ``empty``, ``refusal``, ``timeout``, ``transport``);
    ``finish_reason``; ``length_limited``; ``rung`` the structured-output rung;
    ``requested_max_tokens``; ``elapsed_seconds``; ``input_tokens`` / ``output_tokens``;
    ``transport_retries``; ``corrects`` / ``gleans`` / ``replayed_from`` the attempt
    ({run_id, attempt_seq}) it corrects, extends or restates; ``parse_error``;
    ``validation_issues`` and ``removed_items`` (lists of strings). With ``texts=True``
    also ``piece_text`` (the first user turn as sent), ``corrective_ask`` and ``answer``
    — corpus text. A field a record lacks is null.
    """
    try:
        logs = attempts_logs(out)
    except OSError as error:
        raise UsageError(f"{out}: {error}") from None
    reports = [build_report(path, lines, Filter()) for path, lines in logs]
    reports = [report for report in reports if report.is_attempts_log]
    if not reports:
        raise NoRecords(
            f"{out}: no attempts log — expected an --out holding "
            ".extract-trace/<stem>.attempts.jsonl, or such a log"
        )
    return to_arrow(attempts_table(reports, texts=texts))


def associations(out: str, *, texts: bool = False) -> pa.Table:
    """One row per association line of every source file of the --out folder OUT (or of
    the one file OUT names), files in name order, lines in file order — what ``taguru
    import`` would load, read by its parser.

    Columns: ``source`` the header's id; ``file`` the source file; ``paragraph`` the
    canonical paragraph the line cites (null when none); ``subject``, ``label``,
    ``object``; ``weight``. With ``texts=True`` also ``paragraph_text``, that paragraph
    of the file's passage (null when the line cites none, or one past the passage's
    end) — corpus text. A file import would refuse is a `UsageError` naming its line.
    """
    return to_arrow(associations_table(read_out(out), texts=texts))


def concepts(out: str) -> pa.Table:
    """One row per concept (a spelling used as a subject or an object) over every source
    file of OUT, most used first, then by spelling.

    Columns: ``concept``; ``folded`` the occurrence check's normal form (White_Space
    dropped, lowercased: spellings sharing it are one name to a reader and two to
    import); ``uses`` = ``as_subject`` + ``as_object``; ``segments`` the source files
    using it; ``aliases`` the concept-alias spellings the files map to it.
    """
    tally = Tally()
    for read in read_out(out):
        tally.add(read.source)
    return to_arrow(concepts_table(tally))


@dataclass(frozen=True)
class MetricsTables:
    """The tables ``taguru-ray metrics`` prints, and the per-request table ``--parquet``
    adds, as Arrow — the same schemas as the Parquet files.

    Every table but ``requests`` has a row per segment, per context (several only), per
    group (several OUTs, or a ledger), per run id (records of several runs) and one for
    everything, keyed by ``scope`` (segment/context/group/run_id/run) and ``name``. Rates
    are null when their denominator is zero; ``cost_usd`` is null without prices or when
    some completion's model has none (`notes` says which).

    - summary: ``written``, ``failed``, ``untraced`` segments; ``assoc_loss`` the
      association loss rate; ``coverage_bytes`` the paragraph bytes a kept item cites;
      ``correction_success``; ``stop_valid_share``; ``attempts``, ``moves``;
      ``seconds``, ``input_tokens``, ``output_tokens``, ``cost_usd``.
    - loss: per ``item`` kind (association, alias, question): ``kept``, ``lost`` and
      ``removed`` / ``dropped`` / ``duplicate``; ``rate`` = lost ÷ (kept + lost), and
      each reason's ``*_rate``.
    - coverage: ``paragraphs``, ``covered``, ``rate``; ``bytes``, ``covered_bytes``,
      ``byte_rate``.
    - corrections: ``corrective`` answers, those ``adopted``, ``success``.
    - attempts: ``attempts`` (extraction completions), ``replayed``; per state
      (``stop_valid``, ``stop_malformed``, ``length_limited``, ``empty``, ``refusal``,
      ``timeout``, ``transport``) a count and its ``*_share``; ``transport_retries``;
      ``gleaning`` passes and those ``gleaned``.
    - moves: ladder ``moves``, and ``escalate`` / ``demote`` / ``split`` / ``runaway``.
    - labels: ``associations``, distinct ``labels``, ``top_label``, ``top_share``,
      ``labels_per_association``.
    - graph: ``associations``, distinct ``concepts``, ``concepts_per_association``.
    - cost: ``completions``, ``gleaning``, ``seconds``, ``input_tokens``,
      ``output_tokens``, ``cost_usd`` of live (not replayed) completions.
    - failed: each failed segment's ``attempts``, ``moves``, time, tokens, cost and
      ``next``, the ``taguru-ray inspect`` command that opens its piece to look at.
    - requests: one row per completion of every attempts log, replayed ones included
      (``replayed``): ``out``, ``run_id``, ``model``, ``source``, ``piece_id``,
      ``chunk_index``, ``stage``, ``attempt``, ``max_attempts``, ``attempt_seq``,
      ``state``, ``rung``, ``finish_reason``, tokens, ``elapsed_seconds``,
      ``transport_retries``, ``length_limited``, ``requested_max_tokens``,
      ``piece_bytes`` and the attempt it ``corrects`` / ``gleans`` (run id and seq).
    """

    summary: pa.Table
    loss: pa.Table
    coverage: pa.Table
    corrections: pa.Table
    attempts: pa.Table
    moves: pa.Table
    labels: pa.Table
    graph: pa.Table
    cost: pa.Table
    failed: pa.Table
    requests: pa.Table
    notes: tuple[str, ...] = ()  # what the CLI says on stderr: unreadable lines, unpriced models


PriceTable = Mapping[str, Mapping[str, float]]  # {"<model>": {"input": $, "output": $}}
Ledger = Mapping[str, Any]  # {"sources": {"<source>": {"context": id, "groups": [...]}}}


def metrics(
    out: str | Sequence[str],
    prices: str | PriceTable | None = None,
    *,
    ledger: str | Ledger | None = None,
) -> MetricsTables:
    """The metric tables of one --out, or of several folded together (one group each),
    as ``taguru-ray metrics OUT… [--prices FILE] [--ledger FILE] --parquet DIR`` writes
    them. ``prices``: dollars per one million input and output tokens per model, as a
    ``--prices`` file's path or URL or as its content; ``ledger`` likewise for
    ``--ledger``. A malformed one is a `UsageError`."""
    urls = [out] if isinstance(out, str) else list(out)
    priced = _given(prices, "prices", load_prices) if prices is not None else Prices()
    assigned = _given(ledger, "ledger", load_ledger) if ledger is not None else {}
    report = collect_urls(urls, priced, assigned)
    made = [*tables(report, bool(priced.per_model)), request_table(report)]
    return MetricsTables(
        **{table.name: to_arrow(table) for table in made}, notes=tuple(report_notes(report))
    )


def _given(value: str | Mapping[str, Any], name: str, load: Callable[[str, str], T]) -> T:
    """A --prices/--ledger value: a file's path or URL, or its content as a mapping —
    read by the CLI's own loader either way."""
    if isinstance(value, str):
        try:
            return load(read_regular(value).decode("utf-8"), f"{name} {value}")
        except (OSError, UnicodeDecodeError) as error:
            raise UsageError(f"{name} {value}: {error}") from None
    return load(json.dumps(value), name)
