"""The secret scan, first of all, on the raw lines (SESSIONS.md §2, seed 004 "Import").

Rules are extract's ``--redact`` secrets group (`text/redact.py`) plus a user's
``--redact-rules``; nothing here judges a secret itself. The scan runs before the
format is even detected, so no refusal, log or error built later can hold one.

Each physical line is read twice: as written, and — for each JSON string holding an
escape — decoded, since ``DB_PASSWORD=\\"hunter2\\"`` only reads as an assignment once
``\\"`` is a quote again. As written, a match that is nothing but escape sequences
(the ``\\`` of that ``\\"``) is an artefact of the encoding and does not count; the
decoded string is judged instead. A hit refuses the session with the rule and line.

With ``mask``, each line is masked in two passes, so that it stays JSON: the decoded
strings are redacted and re-encoded whole; then what the raw line still shows (a
secret split from its name by JSON syntax, ``"password": "…"``) is replaced in
place, each replacement kept inside one string and widened over any escape it
would cut. The result is scanned again; a secret still there (one outside any
string, say) refuses the session rather than pass. Placeholders are extract's
``«redacted <rule> <hex>»``, the hex salted with the file's digest.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from taguru_ray.sessions.convert.jsontext import StringToken, snap, string_tokens
from taguru_ray.sessions.convert.refusal import Refused
from taguru_ray.text.redact import (
    Redaction,
    Rule,
    builtin_rules,
    groups_from_setting,
    redact,
    scan_answer_text,
)

SECRET_GROUPS = groups_from_setting("secrets")
_SCAN_SALT = "0" * 64  # placeholders made only to find spans are never kept


@dataclass(frozen=True)
class Hit:
    """One secret: where, and by which rule — never what."""

    line: int
    rule: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.rule}"


@dataclass(frozen=True)
class _Span:
    start: int
    end: int
    placeholder: str
    rule: str


def secret_rules(extra: Sequence[Rule] | None = None) -> list[Rule]:
    """The built-in secrets rules, then a user's rules in file order."""
    return [*builtin_rules(SECRET_GROUPS), *(extra or ())]


def first_secret(lines: Sequence[str], rules: Sequence[Rule]) -> Hit | None:
    """The first line holding a secret, with the first rule it trips there."""
    for number, line in enumerate(lines, start=1):
        rule = line_secret(line, rules)
        if rule is not None:
            return Hit(number, rule)
    return None


def refusal(hit: Hit) -> Refused:
    return Refused(f"a secret (rule {hit.rule}) — refused; --mask replaces it", line=hit.line)


def line_secret(line: str, rules: Sequence[Rule]) -> str | None:
    """The first rule the line trips, as written or in a decoded escaped string."""
    names = scan_answer_text(line, rules)
    if names and "\\" in line:
        redacted, redactions = redact(line, _SCAN_SALT, rules)
        spans = _spans(line, redacted, redactions)
        if spans is not None:
            names = [span.rule for span in _real(line, spans)]
    if names:
        return names[0]
    if "\\" not in line:
        return None
    for token in string_tokens(line):
        if "\\" in token.raw(line):
            names = scan_answer_text(token.decoded(line), rules)
            if names:
                return names[0]
    return None


def mask(lines: Sequence[str], rules: Sequence[Rule], salt: str) -> tuple[list[str], list[Hit]]:
    """Every line with its secrets replaced, and one `Hit` per secret replaced.

    Raises `Refused` for a line whose secret cannot be replaced inside its JSON strings.
    """
    masked: list[str] = []
    hits: list[Hit] = []
    for number, line in enumerate(lines, start=1):
        after, found = _mask_line(line, rules, salt, number)
        if found:
            left = line_secret(after, rules)
            if left is not None:
                raise Refused(
                    f"a secret (rule {left}) that --mask cannot replace inside a JSON string "
                    "— refused",
                    line=number,
                )
            if _parses(line) and not _parses(after):
                raise Refused("--mask would break this line's JSON — refused", line=number)
            hits += [Hit(number, rule) for rule in found]
        masked.append(after)
    return masked, hits


def _mask_line(line: str, rules: Sequence[Rule], salt: str, number: int) -> tuple[str, list[str]]:
    found: list[str] = []
    if "\\" in line:
        line, found = _mask_decoded(line, rules, salt)
    redacted, redactions = redact(line, salt, rules)
    if any(not item.preexisting for item in redactions):
        spans = _spans(line, redacted, redactions)
        if spans is None:
            raise Refused("--mask could not place a secret's replacement — refused", line=number)
        real = _real(line, spans)
        line = _replace_in_strings(line, real)
        found += [span.rule for span in real]
    return line, found


def _mask_decoded(line: str, rules: Sequence[Rule], salt: str) -> tuple[str, list[str]]:
    """Pass 1: each escaped string decoded, redacted, and re-encoded whole."""
    pieces: list[str] = []
    found: list[str] = []
    cursor = 0
    for token in string_tokens(line):
        if "\\" not in token.raw(line):
            continue
        redacted, redactions = redact(token.decoded(line), salt, rules)
        new = [item.rule for item in redactions if not item.preexisting]
        if new:
            pieces += [line[cursor : token.start], json.dumps(redacted, ensure_ascii=False)]
            cursor = token.end
            found += new
    return "".join(pieces) + line[cursor:], found


def _spans(text: str, redacted: str, redactions: Sequence[Redaction]) -> list[_Span] | None:
    """Where each new placeholder's match was in ``text``, or None if that cannot be told.

    `redact` returns the masked text and its placeholders in order, and the text between
    them is unchanged, so each match is found by walking both; the walk is checked by
    rebuilding the masked text from it.
    """
    spans: list[_Span] = []
    pieces: list[str] = []
    source = target = 0
    for item in redactions:
        at = redacted.find(item.placeholder, target)
        if at < 0:
            return None
        start = source + (at - target)
        end = _after_bytes(text, start, item.bytes)
        pieces += [text[source:start], item.placeholder]
        if not item.preexisting:
            spans.append(_Span(start, end, item.placeholder, item.rule))
        source, target = end, at + len(item.placeholder)
    return spans if "".join(pieces) + text[source:] == redacted else None


def _after_bytes(text: str, start: int, size: int) -> int:
    """The index ``size`` UTF-8 bytes after ``start``."""
    end = start
    while size > 0 and end < len(text):
        size -= len(text[end].encode("utf-8", "surrogatepass"))
        end += 1
    return end


def _real(line: str, spans: list[_Span]) -> list[_Span]:
    """The spans less those made of escape sequences only, inside one string: the ``\\`` of
    a ``\\"`` read as a value is the encoding's, and the decoded string is judged instead."""
    tokens = string_tokens(line)
    real = []
    for span in spans:
        inside = [t for t in tokens if t.content[0] <= span.start and span.end <= t.content[1]]
        if not inside or not _only_escapes(line, span, inside[0]):
            real.append(span)
    return real


def _only_escapes(line: str, span: _Span, token: StringToken) -> bool:
    escapes = token.escapes(line)
    start, end = snap((span.start, span.end), escapes)
    covered = start
    for first, last in escapes:
        if first == covered and last <= end:
            covered = last
    return covered >= end > start


def _replace_in_strings(line: str, spans: list[_Span]) -> str:
    """Pass 2: each match replaced where it overlaps a string's content, escapes whole."""
    tokens = string_tokens(line)
    pieces: list[tuple[int, int, str]] = []
    for span in spans:
        for token in _overlapping(tokens, span.start, span.end):
            first, last = token.content
            start, end = snap((max(span.start, first), min(span.end, last)), token.escapes(line))
            if end > start:
                pieces.append((start, end, span.placeholder))
    out: list[str] = []
    cursor = 0
    for start, end, placeholder in sorted(pieces):
        if start < cursor:  # two matches widened over one escape: the first covers both
            if end <= cursor:
                continue
            start, placeholder = cursor, ""
        out += [line[cursor:start], placeholder]
        cursor = end
    return "".join(out) + line[cursor:]


def _overlapping(tokens: list[StringToken], start: int, end: int) -> list[StringToken]:
    return [token for token in tokens if token.content[0] < end and start < token.content[1]]


def _parses(line: str) -> bool:
    try:
        json.loads(line)
    except ValueError:
        return False
    return True
