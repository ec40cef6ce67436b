"""The CPU half of an import, done before the store is touched and on every core (ADR 0067).

Reading a file (JSON lines, the source-file parser) and splitting and tokenising
its passage are pure: they need no store. `prepare_paragraphs` does the second
for one batch; `prepared_streams` does both for many files, in a pool of worker
processes when the machine has more than one core and there are enough files to
pay for starting them, and hands the results back in file order. The writer
then only writes — one transaction per group of files (`SqliteStore.import_group`).
"""

from __future__ import annotations

import multiprocessing
import os
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from taguru_ray.context.importer import Batch, ImportRefusal, Stream, read_stream
from taguru_ray.context.terms import passage_terms
from taguru_ray.text.paragraphs import split_paragraphs

POOL_FROM_FILES = 32  # fewer files: starting workers costs more than it saves
_CHUNK = 8  # files handed to a worker at a time


@dataclass(frozen=True)
class PreparedParagraph:
    """One paragraph as the index stores it: its term counts and length (its questions'
    terms included, EVALUATE.md §2.4)."""

    index: int
    text: str
    length: int
    counts: dict[str, int]


def prepare_paragraphs(batch: Batch) -> list[PreparedParagraph]:
    """The batch's passage split and tokenised ([] without a passage or paragraphs)."""
    passage = batch.source.passage
    if passage is None:
        return []
    paragraphs = split_paragraphs(passage.text)
    questions: dict[int, list[str]] = {}
    for question in batch.source.questions:
        questions.setdefault(question.paragraph, []).append(question.question)
    found = []
    for paragraph in paragraphs:
        terms = passage_terms(paragraph.text)
        for question in questions.get(paragraph.index, []):
            terms.extend(passage_terms(question))
        found.append(
            PreparedParagraph(paragraph.index, paragraph.text, len(terms), dict(Counter(terms)))
        )
    return found


def prepare_stream(job: tuple[str, bytes, str | None]) -> Stream | ImportRefusal:
    """One file read and its batches prepared; a refusal is returned, not raised (it
    crosses a process boundary as a value)."""
    name, data, context = job
    try:
        stream = read_stream(data, name=name, context=context)
    except ImportRefusal as refusal:
        return refusal
    for batch in stream.batches:
        batch.prepared = prepare_paragraphs(batch)
    return stream


def prepared_streams(
    files: Sequence[tuple[str, bytes]], context: str | None, workers: int | None = None
) -> Iterator[tuple[str, Stream | ImportRefusal]]:
    """Each file's prepared stream (or refusal), in file order."""
    jobs = [(name, data, context) for name, data in files]
    count = _workers(len(jobs)) if workers is None else workers
    if count <= 1:
        for job in jobs:
            yield job[0], prepare_stream(job)
        return
    methods = multiprocessing.get_all_start_methods()
    pool_context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    with pool_context.Pool(count) as pool:
        for job, result in zip(jobs, pool.imap(prepare_stream, jobs, _CHUNK), strict=True):
            yield job[0], result


def _workers(files: int) -> int:
    if files < POOL_FROM_FILES:
        return 1
    return max(1, min(os.cpu_count() or 1, 4))
