"""The secret scan, first of all, on the raw lines (SESSIONS.md §2, seed 004 "Import").

Rules are extract's ``--redact`` secrets group (`text/redact.py`) plus a user's
``--redact-rules``; nothing here judges a secret itself. The scan runs before the
format is even detected, so no refusal, log or error built later can hold one.

Each physical line is read at every level it encodes (`layers.py`): as written, and
each JSON string holding an escape decoded — then the strings inside that, level by
level — since ``DB_PASSWORD=\\"hunter2\\"`` only reads as an assignment once ``\\"``
is a quote again, and in a Codex call's ``arguments`` (JSON inside a JSON string)
only once it is decoded twice. In any reading, a match that is nothing but escape
sequences (the ``\\`` of a ``\\"``) is an artefact of the encoding and does not
count. A hit refuses the session with the rule and line.

With ``mask``, every reading's matches are mapped back to the raw line — whole
escape sequences at every level, so no escape is cut — and replaced there by the
placeholder, the rest of the line byte for byte. In the line itself and in any
decoded reading that is JSON, a replacement stays inside one string (a secret split
from its name by JSON syntax, ``"password": "…"``, is replaced in its string), so
the line stays JSON at every level. The same secret seen at several levels is one
replacement, with the placeholder of the deepest reading (its decoded value). The
result is scanned again; a secret still there (one outside any string, say)
refuses the session rather than pass. Placeholders are extract's
``«redacted <rule> <hex>»``, the hex salted with the file's digest and keyed with
``--redact``'s key when one is given.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from taguru_ray.sessions.convert.jsontext import StringToken, snap, string_tokens
from taguru_ray.sessions.convert.layers import Layer, layers
from taguru_ray.sessions.convert.refusal import Refused
from taguru_ray.text.redact import (
    CREDENTIAL_NAMES,
    CREDENTIAL_SHORT_NAMES,
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


@dataclass
class _Found:
    """One match of one reading, as the spans of the raw line it replaces."""

    rule: str
    placeholder: str
    depth: int
    pieces: list[tuple[int, int]]


def secret_rules(extra: Sequence[Rule] | None = None) -> list[Rule]:
    """The built-in secrets rules — the credential assignment read as a URL ends it
    (`url_aware`) — then a user's rules in file order."""
    builtins = [url_aware(rule) for rule in builtin_rules(SECRET_GROUPS)]
    return [*builtins, *(extra or ())]


# A credential named inside a URL ends where URL syntax ends it: userinfo at ``@``, a
# query or fragment value at ``&``, ``;`` or ``#``. redact2's assignment reads a bare
# value on to the next space, so ``https://x-access-token:<token>@github.com/org/repo``
# lost its host and path, and ``?token=<t>&page=2`` its other parameters — text a
# reader needs and no secret. These forms are tried first at each place; every other
# assignment reads as extract's ``--redact`` reads it.
_NAME = (
    rf"(?:[a-z0-9_]*(?:{'|'.join(CREDENTIAL_NAMES)})"
    rf"|(?:[a-z0-9_]*[_-])?(?:{'|'.join(CREDENTIAL_SHORT_NAMES)}))"
)
_IN_USERINFO = rf"\b[a-z][a-z0-9+.]*://(?:[^\s/:@?#]*[-_.])?{_NAME}:([^\s/@?#\"'\\]+)@"
_IN_QUERY = rf"[?&;#]{_NAME}=([^\s&;#\"'<>\\]+)"


def url_aware(rule: Rule) -> Rule:
    """``credential_assignment`` with the URL forms first; any other rule as it is."""
    if rule.name != "credential_assignment":
        return rule
    source = f"{_IN_USERINFO}|{_IN_QUERY}|{rule.pattern.pattern}"
    return replace(rule, pattern=re.compile(source, rule.pattern.flags))


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
    """The first rule the line trips, in the first reading of it that trips one."""
    for layer in layers(line):
        names = _tripped(layer.text, rules)
        if not names:
            continue
        spans = _layer_spans(layer, rules, _SCAN_SALT)
        if spans is None:
            return names[0]
        if spans:
            return spans[0].rule
    return None


def mask(
    lines: Sequence[str], rules: Sequence[Rule], salt: str, key: bytes = b""
) -> tuple[list[str], list[Hit]]:
    """Every line with its secrets replaced, and one `Hit` per secret replaced.

    Raises `Refused` for a line whose secret cannot be replaced inside its JSON strings.
    """
    masked: list[str] = []
    hits: list[Hit] = []
    for number, line in enumerate(lines, start=1):
        after, found, tripped = _mask_line(line, rules, salt, key, number)
        if tripped:
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


def _mask_line(
    line: str, rules: Sequence[Rule], salt: str, key: bytes, number: int
) -> tuple[str, list[str], bool]:
    """The line with every reading's matches replaced in it, the rule of each secret, and
    whether any reading tripped a rule (then the result is scanned again, placed or not)."""
    found: list[_Found] = []
    tripped = False
    for layer in layers(line):
        if not _tripped(layer.text, rules):
            continue
        tripped = True
        spans = _layer_spans(layer, rules, salt, key)
        if spans is None:
            raise Refused("--mask could not place a secret's replacement — refused", line=number)
        for span in spans:
            pieces = [layer.raw_span(*piece) for piece in _clipped(layer, span)]
            if pieces:
                found.append(_Found(span.rule, span.placeholder, layer.depth, pieces))
    secrets = _secrets(found)
    return _replaced(line, secrets), [secret.rule for secret in secrets], tripped


# A rule's regex keeps state for every character it matches: about 300 bytes a character
# of a credential's value, so `password=` before 10 MB of one token took 3 GB. A reading
# longer than a window is read a window at a time (issue 49): each window with `LEAD`
# characters before it (a word boundary, a credential's name) and `OVERLAP` after (a
# secret starting in the window is seen whole if it is no longer). A match is the window's
# it starts in; one reaching its window's far end may be longer than was read, so it
# cannot be placed (a mask refuses the session; a scan reports the rule all the same).
WINDOW = 256 * 1024
OVERLAP = 16 * 1024
LEAD = 1024
_WHITE = re.compile(r"\s")


def _windows(size: int, text: str) -> list[tuple[int, int, int, int]]:
    """(read from, own from, own to, read to) of each window of a `size`-character text;
    a window's lead starts after a white space where there is one, so no word is cut."""
    windows = []
    for own in range(0, size, WINDOW):
        lead = max(own - LEAD, 0)
        if lead:  # cut after the first white space of the lead, so no word is cut
            space = _WHITE.search(text, lead, own)
            lead = space.end() if space is not None else lead
        windows.append((lead, own, min(own + WINDOW, size), min(own + WINDOW + OVERLAP, size)))
    return windows


def _tripped(text: str, rules: Sequence[Rule]) -> list[str]:
    """The rules `text` trips, a window at a time when it is long."""
    if len(text) <= WINDOW + OVERLAP:
        return scan_answer_text(text, rules)
    names: dict[str, None] = {}
    for lead, _, _, end in _windows(len(text), text):
        names.update(dict.fromkeys(scan_answer_text(text[lead:end], rules)))
    return list(names)


def _layer_spans(
    layer: Layer, rules: Sequence[Rule], salt: str, key: bytes = b""
) -> list[_Span] | None:
    """A reading's matches that are more than the encoding's escapes, or None if their
    places cannot be told (a window at a time when the reading is long)."""
    text = layer.text
    if len(text) <= WINDOW + OVERLAP:
        redacted, redactions = redact(text, salt, rules, key)
        spans = _spans(text, redacted, redactions)
        return None if spans is None else _real(text, spans)
    spans = []
    for lead, own, own_end, end in _windows(len(text), text):
        piece = text[lead:end]
        redacted, redactions = redact(piece, salt, rules, key)
        found = _spans(piece, redacted, redactions)
        if found is None:
            return None
        for span in found:
            start, stop = span.start + lead, span.end + lead
            if not own <= start < own_end:
                continue  # another window's
            if stop >= end and end < len(text):
                return None  # it may run past what was read
            spans.append(replace(span, start=start, end=stop))
    return _real(text, spans)


def _clipped(layer: Layer, span: _Span) -> list[tuple[int, int]]:
    """Where a match may be replaced in its reading: inside the strings it overlaps, escapes
    whole, when the reading is the line or JSON; else (a shell command) all of it."""
    if layer.depth > 0 and not _parses(layer.text):
        return [(span.start, span.end)]
    pieces = []
    for token in _overlapping(string_tokens(layer.text), span.start, span.end):
        first, last = token.content
        start, end = snap((max(span.start, first), min(span.end, last)), token.escapes(layer.text))
        if end > start:
            pieces.append((start, end))
    return pieces


def _secrets(found: list[_Found]) -> list[_Found]:
    """One per secret: matches whose replacements overlap are the same secret seen at
    several levels, merged, with the deepest reading's rule and placeholder; in line order."""
    groups: list[_Found] = []
    for match in sorted(found, key=lambda match: min(match.pieces)):
        overlapping = [group for group in groups if _overlap(group.pieces, match.pieces)]
        for group in overlapping:
            groups.remove(group)
        merged = [*overlapping, match]
        deepest = max(merged, key=lambda item: (item.depth, _length(item.pieces)))
        pieces = sorted(
            piece for item in merged if not _read_through(item, deepest) for piece in item.pieces
        )
        groups.append(_Found(deepest.rule, deepest.placeholder, deepest.depth, pieces))
    return sorted(groups, key=lambda group: min(group.pieces))


def _read_through(item: _Found, deepest: _Found) -> bool:
    """Whether `item` is `deepest`'s value read through its encoding: the same rule at a
    shallower level, starting where the deeper match starts. A raw line reads
    ``password: x\\nThe`` as one bare value, the escaped line break and the next word
    with it; decoded, the value is ``x`` and the line break ends it, as it ends it for
    extract's ``--redact`` — the deeper reading is the text, and its end is the value's
    (issue 49). A match of another rule, or one starting elsewhere (a JSON key's whole
    string value, which no decoded reading names as a credential), keeps its pieces."""
    if item is deepest or item.rule != deepest.rule or item.depth >= deepest.depth:
        return False
    return min(item.pieces)[0] == min(deepest.pieces)[0]


def _overlap(one: list[tuple[int, int]], other: list[tuple[int, int]]) -> bool:
    return any(a < d and c < b for a, b in one for c, d in other)


def _length(pieces: list[tuple[int, int]]) -> int:
    return sum(end - start for start, end in pieces)


def _replaced(line: str, secrets: list[_Found]) -> str:
    """Each secret's pieces replaced by its placeholder; overlapping pieces become one."""
    pieces = sorted(
        (start, end, secret.placeholder) for secret in secrets for start, end in secret.pieces
    )
    out: list[str] = []
    cursor = 0
    for start, end, placeholder in pieces:
        if start < cursor:  # overlaps the piece before, which holds its placeholder
            if end <= cursor:
                continue
            start, placeholder = cursor, ""
        out += [line[cursor:start], placeholder]
        cursor = end
    return "".join(out) + line[cursor:]


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


def _overlapping(tokens: list[StringToken], start: int, end: int) -> list[StringToken]:
    return [token for token in tokens if token.content[0] < end and start < token.content[1]]


def _parses(line: str) -> bool:
    try:
        json.loads(line)
    except ValueError:
        return False
    return True
