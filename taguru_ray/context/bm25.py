"""BM25 over paragraph postings, in f32 exactly as the reference computes it (EVALUATE.md §2.4).

k1 = 1.2, b = 0.75; ``idf = ln(1 + (N - df + 0.5) / (df + 0.5))`` with N the
context's live paragraphs and df the paragraphs carrying the term;
``contribution = idf * (tf * (k1 + 1)) / (tf + k1 * (1 - b + b * len / avg))``
with len a paragraph's term count (its questions' terms included) and avg the
mean length, at least 1. Every operation is an f32 operation in the
reference's order, and a paragraph's score is the f32 sum of its
contributions in query-term order, so the scores equal the reference's bit for
bit: the logarithm is the platform's ``logf`` (what Rust's ``f32::ln`` calls)
when it can be loaded, else the correctly rounded f64 logarithm.

Corpus statistics stay global under a tag/time filter: the filter only says
which paragraphs may answer. A paragraph any query term touches is a hit even
at score 0.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

K1 = np.float32(1.2)
B = np.float32(0.75)
_ONE = np.float32(1.0)
_HALF = np.float32(0.5)
_K1_PLUS_ONE = K1 + _ONE
_ONE_MINUS_B = _ONE - B


def _load_logf() -> Callable[[float], float] | None:
    name = ctypes.util.find_library("m")
    if name is None:
        return None
    try:
        logf = ctypes.CDLL(name).logf
    except (OSError, AttributeError):
        return None
    logf.restype, logf.argtypes = ctypes.c_float, [ctypes.c_float]
    return logf


_LOGF = _load_logf()


def ln_f32(value: np.float32) -> np.float32:
    """``f32::ln``: the platform logf, else the f64 logarithm rounded to f32."""
    if _LOGF is not None:
        return np.float32(_LOGF(float(value)))
    return np.float32(math.log(float(value)))


def idf(live: np.float32, carriers: np.float32) -> np.float32:
    return ln_f32(_ONE + (live - carriers + _HALF) / (carriers + _HALF))


def contributions(
    term_idf: np.float32, tf: np.ndarray, length: np.ndarray, average: np.float32
) -> np.ndarray:
    """One term's addend for each carrying paragraph (f32 arrays in, f32 array out)."""
    return term_idf * (tf * _K1_PLUS_ONE) / (tf + K1 * (_ONE_MINUS_B + B * length / average))


def average_length(live: int, total_length: int) -> np.float32:
    """The mean paragraph length as the reference keeps it: an f64 mean, at least 1, as f32."""
    return np.float32(max(total_length / live, 1.0))


@dataclass(frozen=True)
class Postings:
    """One term's live postings: paragraph keys and their term counts and lengths."""

    paragraphs: np.ndarray  # int64 keys
    tf: np.ndarray  # float32
    length: np.ndarray  # float32


def score(
    postings: Sequence[Postings], live: int, total_length: int
) -> tuple[np.ndarray, np.ndarray]:
    """(paragraph keys, f32 scores) of every touched paragraph, for deduplicated query
    terms' postings given in query-term order. Nothing is filtered or sorted here."""
    present = [p for p in postings if len(p.paragraphs)]
    if live == 0 or not present:
        return np.zeros(0, np.int64), np.zeros(0, np.float32)
    total = np.float32(live)
    average = average_length(live, total_length)
    keys, where = np.unique(np.concatenate([p.paragraphs for p in present]), return_inverse=True)
    scores = np.zeros(len(keys), np.float32)
    start = 0
    for term in present:
        end = start + len(term.paragraphs)
        term_idf = idf(total, np.float32(len(term.paragraphs)))
        scores[where[start:end]] += contributions(term_idf, term.tf, term.length, average)
        start = end
    return keys, scores


def wire_f32(value: float | np.floating) -> float:
    """A float whose JSON spelling is the f32's shortest round-trip text (``0.28768212``),
    as serde writes an f32."""
    return float(str(np.float32(value)))
