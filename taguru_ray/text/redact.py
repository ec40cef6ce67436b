"""The redaction gate (taguru ADR 0038, ``redact2``): what never reaches the model.

Under ``--redact`` the segment text is masked at read, before chunking,
candidates, the prompt, the passage and every record, so the placeholder is
the only form of a secret anything downstream sees. The judgment is a pattern
judgment — deterministic, no model, no dictionary — in two selectable groups:

- ``secrets``: aws_access_key, github_token, openai_key, slack_token,
  google_api_key, private_key (a PEM block), jwt, credential_assignment,
  authorization_header, url_userinfo;
- ``pii``: email, phone (Japanese, North American and international forms),
  my_number (12-digit 個人番号 whose check digit holds), us_ssn (a Social
  Security number the SSA could issue), payment_card (issuer range + Luhn).

Names, addresses, dates, IP addresses and high-entropy strings are not judged,
on purpose. A user's rules file (``name<TAB>regex`` per line) is applied after
the built-ins in file order.

Matching is per canonical paragraph (``split_paragraphs`` of the original
text), and every rule, a user's too, reads the paragraph's matching forms
(``text/matching_form.py``: NFKC, every format character dropped; a space
character other than U+0020 read once as a space and once dropped, as a
zero-width space is) so that full-width digits, a no-break space or a
zero-width one hide nothing; a match in either form is mapped back to the
original characters it came from, and those are masked. ``private_key``
alone reads the whole segment, since a PEM block may hold a blank line (the
legacy encrypted form does): each paragraph's part of a block is a candidate
there, masked with its own placeholder, so no mask spans a paragraph
separator. Within a paragraph every rule's candidates are collected; a
value-only rule (assignment, header, userinfo) masks its value
but owns its whole match, shadowing other rules' candidates inside it (not a
key block's part, which may run past it); the rest are ordered by start
ascending, length descending, then rule order, and accepted greedily. A
placeholder already in the input, ``«redacted <rule> <4–64 hex>»``, is kept
byte for byte as rule ``preexisting`` (only as written: a look-alike in
full-width digits is text like any other). A new placeholder is
``«redacted <rule> <hex>»``, the hex a prefix of
``sha256(segment_sha256 ‖ matched bytes)``: four digits, or for a rule whose
distinct matches collide there, the shortest length telling all of that
rule's matches apart. Placeholders hold no newline, so paragraph N of the
redacted text is paragraph N of the file.

User patterns are Rust regexes in the contract; here they are compiled by
Python's ``re``, so a pattern must be valid for both. Look-around, which Rust
does not have, is refused.

Its length (over 400 lines) is a rule table's: the built-in rules, the rules
file and the masking that applies them.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from taguru_ray.text.matching_form import MatchingForm, joined_form, matching_form
from taguru_ray.text.paragraphs import WHITE_SPACE, Paragraph, is_white_space, split_paragraphs

REDACT_VERSION = "redact2"
SECRETS = "secrets"
PII = "pii"
GROUPS: frozenset[str] = frozenset({SECRETS, PII})
USER_GROUP = "user"
PREEXISTING_RULE = "preexisting"

# The digest prefix a placeholder carries when nothing under its rule collides.
MIN_PLACEHOLDER_HEX = 4
_FULL_HEX = 64

_PLACEHOLDER = re.compile(r"«redacted [a-z0-9_]+ [0-9a-f]{4,64}»")
_RULE_NAME = re.compile(r"[a-z0-9_]+")
_SHA256_HEX = re.compile(r"[0-9a-f]{64}")

# Rust's \s is Unicode White_Space; Python's also takes U+001C..U+001F. Spell the
# class out so a value ends exactly where the reference's would.
_WS = "".join(f"\\u{ord(char):04x}" for char in sorted(WHITE_SPACE))
# White_Space within a line: what may pad a line without making it another.
_H = "".join(f"\\u{ord(char):04x}" for char in sorted(WHITE_SPACE - {"\n"}))

_LOOK_AROUND = ("(?=", "(?!", "(?<=", "(?<!")


class RulesError(ValueError):
    """A ``--redact-rules`` file line that cannot become a rule: a usage error, never skipped."""


@dataclass(frozen=True)
class Anchor:
    """A linear-time search for a pattern ``re`` would backtrack through quadratically.

    Every match holds ``literal``, reached through one run of ``run`` characters
    (``run`` matches one of them, and never the literal's first character) that
    starts where ``head`` matches. Then the leftmost match holding an
    occurrence of the literal starts at the first ``head`` position of the run
    before it, or there is none — one attempt per occurrence, the same matches
    ``finditer`` finds (Rust's engine is linear; Python's is not).
    """

    literal: str
    run: re.Pattern[str]
    head: re.Pattern[str]


@dataclass(frozen=True)
class Rule:
    """One redaction rule: its name (written into the placeholder), group and compiled pattern.

    A ``value_only`` rule masks the first of its pattern's groups that took
    part in the match and owns the whole match; ``validate``, when set, must
    accept the masked text as the rules read it (a check digit the pattern
    cannot express); ``anchor``, when set, finds the same matches as
    ``pattern.finditer`` in linear time. An ``across_paragraphs`` rule is
    matched over the whole segment and each paragraph's part of a match is
    masked on its own (a PEM block a blank line splits); it is never
    ``value_only``.
    """

    name: str
    group: str
    pattern: re.Pattern[str]
    value_only: bool = False
    validate: Callable[[str], bool] | None = None
    anchor: Anchor | None = None
    across_paragraphs: bool = False

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        """Successive non-overlapping matches in ``text``, as ``re.finditer`` yields them."""
        if self.anchor is None:
            return self.pattern.finditer(text)
        return _anchored_finditer(self.pattern, self.anchor, text)


def _anchored_finditer(
    pattern: re.Pattern[str], anchor: Anchor, text: str
) -> Iterator[re.Match[str]]:
    resume = 0
    at = text.find(anchor.literal)
    while at >= 0:
        start = _run_start(anchor.run, text, at, resume)
        head = next((p for p in range(start, at) if anchor.head.match(text, p)), None)
        match = None if head is None else pattern.match(text, head)
        if match is not None:
            yield match
            resume = match.end()
        at = text.find(anchor.literal, max(at + 1, resume))


def _run_start(run: re.Pattern[str], text: str, at: int, resume: int) -> int:
    start = at
    while start > resume and run.match(text, start - 1):
        start -= 1
    return start


@dataclass(frozen=True)
class Redaction:
    """One accepted match, as the trace and stderr account for it: never the matched text.

    ``bytes`` is the UTF-8 length of the text the placeholder replaced (of the
    placeholder itself when ``preexisting``).
    """

    rule: str
    paragraph: int
    placeholder: str
    bytes: int
    preexisting: bool = False


@dataclass(frozen=True)
class _Candidate:
    start: int
    end: int
    order: int
    rule: str
    preexisting: bool = False
    owns: tuple[int, int] | None = None
    spanning: bool = False


@dataclass(frozen=True)
class _Match:
    rule: str
    paragraph: int
    start: int
    end: int
    preexisting: bool


# --- check digits -----------------------------------------------------------------------------


def my_number_check_digit_holds(candidate: str) -> bool:
    """個人番号: the 12th digit is 11 − (Σ Pn·Qn mod 11), or 0 when that is 10 or 11.

    Pn is the n-th of the first eleven digits counted from the right; Qn is
    n+1 for n ≤ 6 and n−5 for n ≥ 7. Separators are ignored; only ASCII digits
    count, so a run with any other digit never validates.
    """
    digits = _ascii_digits(candidate)
    if len(digits) != 12:
        return False
    weighted = sum(
        digit * (n + 1 if n <= 6 else n - 5)
        for n, digit in enumerate(reversed(digits[:11]), start=1)
    )
    remainder = weighted % 11
    return digits[11] == (0 if remainder <= 1 else 11 - remainder)


def payment_card_holds(candidate: str) -> bool:
    """13–19 digits in a known issuer range whose Luhn check digit holds.

    Ranges: Visa 4, Mastercard 51–55 and 2221–2720, American Express 34/37,
    JCB 3528–3589, Discover 6011 and 65.
    """
    digits = _ascii_digits(candidate)
    return 13 <= len(digits) <= 19 and _known_issuer(digits) and _luhn_holds(digits)


def phone_digits_plausible(candidate: str) -> bool:
    """As many digits as a phone number has: 8–15 after a ``+`` country code (E.164),
    else 10 or 11 (a Japanese number with its leading 0, a North American one
    with or without its 1) — so ``05-12-2024`` or ``0 12 345`` is no number.
    """
    digits = len(_ascii_digits(candidate))
    return 8 <= digits <= 15 if candidate.startswith("+") else 10 <= digits <= 11


def us_ssn_holds(candidate: str) -> bool:
    """A Social Security number as the SSA issues them: area 001–899 but not 666, group
    01–99, serial 0001–9999 (so 000-12-3456 or 123-00-4567 is a reference, not a person)."""
    digits = _ascii_digits(candidate)
    if len(digits) != 9:
        return False
    area = digits[0] * 100 + digits[1] * 10 + digits[2]
    group = digits[3] * 10 + digits[4]
    serial = int("".join(map(str, digits[5:])))
    return 0 < area < 900 and area != 666 and group > 0 and serial > 0


def _ascii_digits(text: str) -> list[int]:
    return [ord(char) - 48 for char in text if "0" <= char <= "9"]


def _known_issuer(digits: list[int]) -> bool:
    lead2 = digits[0] * 10 + digits[1]
    lead4 = lead2 * 100 + digits[2] * 10 + digits[3]
    return (
        digits[0] == 4
        or 51 <= lead2 <= 55
        or 2221 <= lead4 <= 2720
        or lead2 in (34, 37)
        or 3528 <= lead4 <= 3589
        or lead4 == 6011
        or lead2 == 65
    )


def _luhn_holds(digits: list[int]) -> bool:
    total = 0
    for position, digit in enumerate(reversed(digits)):
        doubled = digit * 2 if position % 2 else digit
        total += doubled - 9 if doubled > 9 else doubled
    return total % 10 == 0


# --- the built-in rule set (redact2) ----------------------------------------------------------


def _builtin(
    name: str,
    group: str,
    source: str,
    flags: int = 0,
    *,
    value_only: bool = False,
    validate: Callable[[str], bool] | None = None,
    anchor: Anchor | None = None,
    across_paragraphs: bool = False,
) -> Rule:
    """A built-in: ASCII ``\\b``, ``\\w`` and ``\\d``, so ``電話03-1234-5678`` or
    ``キーはAKIA…です`` still has a boundary where the script changes."""
    return Rule(
        name,
        group,
        re.compile(source, flags | re.ASCII),
        value_only,
        validate,
        anchor,
        across_paragraphs,
    )


def _either(*forms: str) -> str:
    return "|".join(f"(?:{form})" for form in forms)


# A PEM private key (PKCS#1, PKCS#8, SEC1, OpenSSH, OpenPGP armor). Within one
# paragraph, BEGIN to END whatever lies between (a quoted or "\\n"-escaped
# block too). Otherwise the block's body lines: RFC 1421 headers (Proc-Type,
# DEK-Info), base64 lines, blank lines before a long or padded base64 line
# (the legacy encrypted form puts one after its headers), through the END line
# or, when there is none (an excerpt), the last body line.
_PEM_LABEL = r"[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?"
_PEM_BEGIN = rf"-----BEGIN {_PEM_LABEL}-----"
_PEM_END = rf"-----END {_PEM_LABEL}-----"
_PEM_HEADER = r"[A-Za-z][A-Za-z0-9-]*:[^\n]*"
_PEM_BASE64 = r"[A-Za-z0-9+/=]+"
_PEM_BASE64_AFTER_BLANK = _either(r"[A-Za-z0-9+/]{16,}={0,2}", r"[A-Za-z0-9+/]*={1,2}")
_PEM_IN_PARAGRAPH = rf"(?:[^\n]|\n[{_H}]*[^{_WS}])*?(?:\n[{_H}]*)?{_PEM_END}"
_PEM_BODY = (
    r"(?:\\n[A-Za-z0-9+/=]*)*"  # the rest of an escaped one-line block
    rf"[{_H}]*(?:"
    rf"\n[{_H}]*(?:{_either(_PEM_HEADER, _PEM_BASE64)})[{_H}]*$"
    rf"|\n[{_H}]*(?:\n[{_H}]*)+(?:{_either(_PEM_HEADER, _PEM_BASE64_AFTER_BLANK)})[{_H}]*$"
    rf")*(?:(?:\n[{_H}]*)+{_PEM_END})?"
)

# The names a credential goes by, as the last word of a key: DB_PASSWORD,
# client_secret, SecretAccessKey, access_token, X-Api-Key, private_key_id. A
# name may end a longer identifier but not continue into one (max_tokens: is a
# setting, passwordless: a flag).
CREDENTIAL_NAMES: tuple[str, ...] = (
    "password",
    "passwd",
    "passphrase",
    r"secret(?:_?access)?(?:_?key)?(?:_?base)?",
    "token",
    r"api[_-]?key",
    r"(?:private|signing|encryption|master)[_-]?key(?:[_-]?id)?",
)
# `pass` is too short to end a longer word (bypass:, compass =): it is a name
# alone or after `_` or `-` (DB_PASS, smtp-pass, "pass":).
CREDENTIAL_SHORT_NAMES: tuple[str, ...] = ("pass",)
# The same in Japanese labels, which no ASCII word boundary precedes.
CREDENTIAL_LABELS_JA: tuple[str, ...] = ("パスワード", "暗証番号")
# A quote, or a quote JSON escaped once or more (\", \\\" inside a JSON string).
_QUOTE = r"(?:\\*[\"'])"
# A bare value's character, or a backslash run before one (C:\dir): a backslash
# before a quote or the end is the escape of what follows, not the value.
_BARE = f"[^{_WS}\"',;、。「」\\\\]"
# A header's credential: to the next space or quote, the same way.
_TOKEN = f"[^{_WS}\"'\\\\]"
# The key may be quoted ("password": …, 'api_key': …, \"token\": …). A quoted
# value is masked to its closing quote, spaces and all, an escaped-quoted one to
# its closing escaped quote; a bare one to the next space, quote, comma,
# semicolon or Japanese punctuation.
_CREDENTIAL_VALUE = _either(
    r'"((?:[^"\\\n]|\\.)+)"',
    r"'((?:[^'\\\n]|\\.)+)'",
    r'\\+"((?:[^"\\\n]|\\+[^"\\\n])+)\\+"',
    r"\\+'((?:[^'\\\n]|\\+[^'\\\n])+)\\+'",
    rf"{_QUOTE}?((?:{_BARE}|\\+{_BARE})+)",
)

_DASHES = "\\-\u2010\u2011\u2012\u2013\u2014\u2015\u2212\u30fc"  # - ‐ ‑ ‒ – — ― − ー
# Separators are required: a bare digit run is a date, an article, a price;
# the digit count is checked too (``phone_digits_plausible``).
PHONE_FORMS: tuple[str, ...] = (
    # Japanese: 03-1234-5678, 090 1234 5678, 0120-123-456, (03) 1234-5678
    rf"\b0\d{{1,4}}[{_DASHES} ]\d{{1,4}}[{_DASHES} ]\d{{3,4}}\b",
    rf"\(0\d{{1,4}}\)[{_WS}]?\d{{1,4}}[{_DASHES} ]\d{{3,4}}\b",
    # North American: (415) 555-2671, 415-555-2671, 415.555.2671, 555 123 4567,
    # 1-800-555-0199 — any exchange, as the everyday fictional 555-123-4567 has
    rf"\(\d{{3}}\) ?\d{{3}}[{_DASHES}. ]\d{{4}}\b",
    rf"\b(?:1[{_DASHES}. ])?\d{{3}}[{_DASHES}. ]\d{{3}}[{_DASHES}. ]\d{{4}}\b",
    # International: +81 3 1234 5678, +1 415 555 2671, +1 (415) 555-2671
    r"\+\d{1,3}[- ]\d{1,4}[- ]\d{2,4}[- ]\d{3,4}\b",
    r"\+\d{1,3} ?\(\d{1,4}\) ?\d{1,4}[- ]\d{3,4}\b",
)


# In taguru ADR 0038's order, which is also the tie-break order between candidates.
_BUILTINS: tuple[Rule, ...] = (
    _builtin("aws_access_key", SECRETS, r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    _builtin(
        "github_token",
        SECRETS,
        r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})\b",
    ),
    _builtin("openai_key", SECRETS, r"\bsk-[A-Za-z0-9_-]{20,}\b"),
    _builtin("slack_token", SECRETS, r"\bxox[abpr]-[A-Za-z0-9-]{10,}\b"),
    _builtin("google_api_key", SECRETS, r"\bAIza[0-9A-Za-z_-]{35}\b"),
    _builtin(
        "private_key",
        SECRETS,
        rf"{_PEM_BEGIN}(?:{_PEM_IN_PARAGRAPH}|{_PEM_BODY})",
        re.MULTILINE,
        across_paragraphs=True,
    ),
    # `eyJ` is base64url for `{"`: header and payload that decode to a JSON object.
    _builtin(
        "jwt",
        SECRETS,
        r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\b",
    ),
    _builtin(
        "credential_assignment",
        SECRETS,
        rf"(?:\b[a-z0-9_]*(?:{'|'.join(CREDENTIAL_NAMES)})"
        rf"|\b(?:[a-z0-9_]*[_-])?(?:{'|'.join(CREDENTIAL_SHORT_NAMES)})"
        rf"|{'|'.join(CREDENTIAL_LABELS_JA)})"
        rf"{_QUOTE}?[{_WS}]*[=:][{_WS}]*(?:{_CREDENTIAL_VALUE})",
        re.IGNORECASE,
        value_only=True,
    ),
    _builtin(
        "authorization_header",
        SECRETS,
        rf"\bAuthorization{_QUOTE}?[{_WS}]*:[{_WS}]*{_QUOTE}?(?:Bearer|Basic)[{_WS}]+"
        rf"((?:{_TOKEN}|\\+{_TOKEN})+)",
        re.IGNORECASE,
        value_only=True,
    ),
    # No `-` in the scheme: case-folded, `KEY-----https://` would reach back into
    # a private-key block's closing line.
    _builtin(
        "url_userinfo",
        SECRETS,
        rf"\b[a-z][a-z0-9+.]*://[^{_WS}/:@]+:([^{_WS}/@]+)@",
        re.IGNORECASE,
        value_only=True,
        anchor=Anchor(
            "://", re.compile("[a-z0-9+.]", re.I | re.A), re.compile(r"\b[a-z]", re.I | re.A)
        ),
    ),
    _builtin(
        "email",
        PII,
        r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b",
        anchor=Anchor(
            "@", re.compile("[A-Za-z0-9._%+-]", re.A), re.compile(r"\b[A-Za-z0-9._%+-]", re.A)
        ),
    ),
    _builtin("phone", PII, _either(*PHONE_FORMS), validate=phone_digits_plausible),
    _builtin(
        "my_number",
        PII,
        r"\b\d{4}[ -]?\d{4}[ -]?\d{4}\b",
        validate=my_number_check_digit_holds,
    ),
    _builtin(
        "us_ssn",
        PII,
        rf"\b\d{{3}}[{_DASHES} ]\d{{2}}[{_DASHES} ]\d{{4}}\b",
        validate=us_ssn_holds,
    ),
    _builtin("payment_card", PII, r"\b\d(?:[ -]?\d){12,18}\b", validate=payment_card_holds),
)

BUILTIN_NAMES: tuple[str, ...] = tuple(rule.name for rule in _BUILTINS)


def builtin_rules(groups: frozenset[str]) -> list[Rule]:
    """The built-ins of ``groups`` (a subset of ``GROUPS``), in taguru ADR 0038's order."""
    _check_groups(groups)
    return [rule for rule in _BUILTINS if rule.group in groups]


def groups_from_setting(setting: str) -> frozenset[str]:
    """The groups a resolved ``redact`` setting names: ``""`` (off), both, secrets or pii."""
    if setting == "":
        return frozenset()
    if setting == "both":
        return GROUPS
    if setting in GROUPS:
        return frozenset({setting})
    raise ValueError(f"redact takes '', both, secrets or pii, got {setting!r}")


def redaction_input(groups: frozenset[str], rules_sha256: str | None) -> str:
    """The manifest/checkpoint ``redaction`` value (a computation input, taguru ADR 0038 §3.5).

    ``""`` off; ``redact2`` for both groups, ``redact2:secrets`` or
    ``redact2:pii`` for one; ``+<64 hex>`` (the rules file's whole SHA-256)
    appended when a rules file is given — which needs redaction on.
    """
    _check_groups(groups)
    if not groups:
        if rules_sha256 is not None:
            raise ValueError(
                "--redact-rules needs --redact: a rules file with redaction off runs nothing"
            )
        return ""
    value = REDACT_VERSION if groups == GROUPS else f"{REDACT_VERSION}:{next(iter(groups))}"
    if rules_sha256 is None:
        return value
    if not _SHA256_HEX.fullmatch(rules_sha256):
        raise ValueError(f"a rules file digest is 64 lowercase hex digits, got {rules_sha256!r}")
    return f"{value}+{rules_sha256}"


def _check_groups(groups: frozenset[str]) -> None:
    unknown = sorted(groups - GROUPS)
    if unknown:
        raise ValueError(f"redaction groups are secrets and pii, got {', '.join(unknown)}")


# --- the user's rules file --------------------------------------------------------------------


def parse_rules_file(text: str | bytes, *, path: str) -> tuple[list[Rule], str]:
    """A ``--redact-rules`` file's rules, in file order, and the SHA-256 hex of its bytes.

    One ``name<TAB>regex`` per line; blank lines and lines starting with ``#``
    are ignored. A name is ``[a-z0-9_]+``, not a built-in's (whichever groups
    are on), not ``preexisting``, not an earlier line's; the pattern must
    compile and may not look around. Any other line raises ``RulesError``
    naming the path, the line and the fix. Pass the file's raw bytes, or text
    read with ``newline=""``, so the digest is of the bytes on disk.
    """
    raw = text if isinstance(text, bytes) else text.encode("utf-8")
    try:
        decoded = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise RulesError(
            f"--redact-rules: {path}: is not UTF-8 ({error}) — save it as UTF-8"
        ) from None
    rules: list[Rule] = []
    first_line: dict[str, int] = {}
    for number, line in enumerate(_lines(decoded), start=1):
        if is_white_space(line) or line.lstrip("".join(WHITE_SPACE)).startswith("#"):
            continue
        try:
            rule = _user_rule(line, first_line)
        except ValueError as error:
            raise RulesError(f"--redact-rules: {path}: line {number}: {error}") from None
        first_line[rule.name] = number
        rules.append(rule)
    return rules, hashlib.sha256(raw).hexdigest()


def _lines(text: str) -> list[str]:
    """Rust's ``str::lines`` with the reference's trailing-CR trim: ``\\n`` ends a line."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line.rstrip("\r") for line in lines]


def _user_rule(line: str, first_line: dict[str, int]) -> Rule:
    name, tab, pattern = line.partition("\t")
    if not tab:
        raise ValueError(
            "expected name<TAB>regex, found no tab — separate the rule name from its "
            "pattern with one TAB character"
        )
    _check_user_name(name, first_line)
    return Rule(name, USER_GROUP, _compile_user_pattern(name, pattern))


def _check_user_name(name: str, first_line: dict[str, int]) -> None:
    if not _RULE_NAME.fullmatch(name):
        raise ValueError(
            f"rule name '{name}' is not [a-z0-9_]+ — it is written into the placeholder; "
            "use lowercase ASCII letters, digits and _"
        )
    if name in BUILTIN_NAMES or name == PREEXISTING_RULE:
        what = (
            "a built-in rule's name" if name in BUILTIN_NAMES else "reserved for kept placeholders"
        )
        raise ValueError(f"'{name}' is {what} — give the rule another name")
    if name in first_line:
        raise ValueError(
            f"rule '{name}' given twice (first at line {first_line[name]}) — rename or remove one"
        )


def _compile_user_pattern(name: str, pattern: str) -> re.Pattern[str]:
    if pattern == "":
        raise ValueError(f"rule '{name}' has an empty pattern — write the regex after the TAB")
    try:
        compiled = re.compile(pattern)
    except re.error as error:
        raise ValueError(
            f"rule '{name}': the pattern does not compile ({error}) — fix the regex"
        ) from None
    if _has_look_around(pattern):
        raise ValueError(
            f"rule '{name}': look-around ((?=, (?!, (?<=, (?<!) is not supported — a Rust "
            r"regex has none; bound the pattern with \b instead"
        )
    return compiled


def _has_look_around(pattern: str) -> bool:
    """Whether a look-around group opens outside a character class (escapes skipped)."""
    index, in_class = 0, False
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            index += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
            index = _class_body_start(pattern, index + 1)
            continue
        elif pattern.startswith(_LOOK_AROUND, index):
            return True
        index += 1
    return False


def _class_body_start(pattern: str, index: int) -> int:
    """Skip a class's ``^`` and a leading ``]``, which is a literal there."""
    if pattern.startswith("^", index):
        index += 1
    if pattern.startswith("]", index):
        index += 1
    return index


# --- scanning ---------------------------------------------------------------------------------


def _scan(text: str, rules: Sequence[Rule]) -> list[_Match]:
    """Every accepted match, paragraph by paragraph, offsets into ``text``."""
    paragraphs = [
        _read(paragraph.index, offset, paragraph.text)
        for paragraph, offset in _paragraph_offsets(text)
    ]
    across: dict[int, list[_Candidate]] = {}
    for reading in range(max((len(p.forms) for p in paragraphs), default=0)):
        for index, found in _across_paragraphs(text, paragraphs, rules, reading).items():
            across.setdefault(index, []).extend(found)
    matches: list[_Match] = []
    for paragraph in paragraphs:
        candidates = _candidates(paragraph, rules) + across.get(paragraph.index, [])
        for found in _accept(_unshadowed(candidates)):
            matches.append(
                _Match(
                    found.rule,
                    paragraph.index,
                    paragraph.offset + found.start,
                    paragraph.offset + found.end,
                    found.preexisting,
                )
            )
    return matches


@dataclass(frozen=True)
class _Read:
    """A canonical paragraph, where it sits in the segment, and its matching forms: the
    spaced one, then the joined one when the paragraph holds a space character."""

    index: int
    offset: int
    text: str
    forms: tuple[MatchingForm, ...]


def _read(index: int, offset: int, text: str) -> _Read:
    joined = joined_form(text)
    spaced = matching_form(text)
    return _Read(index, offset, text, (spaced,) if joined is None else (spaced, joined))


def _paragraph_offsets(text: str) -> Iterator[tuple[Paragraph, int]]:
    """Each canonical paragraph with its offset in ``text``.

    ``find`` from the previous paragraph's end lands on the paragraph itself:
    only White_Space separates paragraphs, and a paragraph holds a character
    that is not White_Space, so no earlier occurrence can start in the gap.
    """
    cursor = 0
    for paragraph in split_paragraphs(text):
        start = text.find(paragraph.text, cursor)
        yield paragraph, start
        cursor = start + len(paragraph.text)


def _candidates(paragraph: _Read, rules: Sequence[Rule]) -> list[_Candidate]:
    """Each paragraph rule's candidates, found in each matching form, spans in the original.

    A match in either form counts: the spaced form finds a number grouped by no-break
    spaces, the joined one an address a no-break space was put inside.
    """
    spaced = paragraph.forms[0]
    found = []
    for placeholder in _PLACEHOLDER.finditer(spaced.text):
        start, end = spaced.original_span(*placeholder.span())
        # Kept only as written: a look-alike in other characters is text like any other.
        if _PLACEHOLDER.fullmatch(paragraph.text, start, end):
            found.append(_Candidate(start, end, -1, PREEXISTING_RULE, preexisting=True))
    for form in paragraph.forms:
        for order, rule in enumerate(rules):
            if rule.across_paragraphs:
                continue
            for match in rule.finditer(form.text):
                candidate = _candidate(match, order, rule, form)
                if candidate is not None:
                    found.append(candidate)
    return found


def _candidate(
    match: re.Match[str], order: int, rule: Rule, form: MatchingForm
) -> _Candidate | None:
    owns: tuple[int, int] | None = None
    start, end = match.span()
    if rule.value_only:
        owns = form.original_span(start, end)
        value = _value_span(match)
        if value is None:
            return None
        start, end = value
    if rule.validate is not None and not rule.validate(match.string[start:end]):
        return None
    start, end = form.original_span(start, end)
    return _Candidate(start, end, order, rule.name, owns=owns)


def _value_span(match: re.Match[str]) -> tuple[int, int] | None:
    """The first group that took part: a value rule spells each way of quoting as its own."""
    for group in range(1, (match.re.groups or 0) + 1):
        if match.start(group) >= 0:
            return match.span(group)
    return None


def _across_paragraphs(
    text: str, paragraphs: Sequence[_Read], rules: Sequence[Rule], reading: int
) -> dict[int, list[_Candidate]]:
    """The candidates of the rules matched over the whole segment, by paragraph index,
    in one reading (0 spaced, 1 joined: a paragraph with no joined form gives its spaced).

    A match becomes one candidate per paragraph it touches, the paragraph's
    part of it, so no mask covers a separator and the paragraphs keep their
    count and indices.
    """
    spanning = [(order, rule) for order, rule in enumerate(rules) if rule.across_paragraphs]
    if not spanning or not paragraphs:
        return {}
    joined, firsts = _joined_forms(text, paragraphs, reading)
    found: dict[int, list[_Candidate]] = {}
    for order, rule in spanning:
        for match in rule.finditer(joined):
            if rule.validate is not None and not rule.validate(match.group()):
                continue
            since, to = match.span()
            for index in range(max(bisect_right(firsts, since) - 1, 0), len(paragraphs)):
                first, form = firsts[index], _form_of(paragraphs[index], reading)
                if first >= to:
                    break
                start, end = max(since, first) - first, min(to, first + len(form.text)) - first
                if end > start:
                    start, end = form.original_span(start, end)
                    piece = _Candidate(start, end, order, rule.name, spanning=True)
                    found.setdefault(index, []).append(piece)
    return found


def _form_of(paragraph: _Read, reading: int) -> MatchingForm:
    return paragraph.forms[min(reading, len(paragraph.forms) - 1)]


def _joined_forms(text: str, paragraphs: Sequence[_Read], reading: int) -> tuple[str, list[int]]:
    """The paragraphs' matching forms joined by the original separators, and where each starts."""
    pieces: list[str] = []
    firsts: list[int] = []
    cursor = length = 0
    for paragraph in paragraphs:
        gap = text[cursor : paragraph.offset]
        form = _form_of(paragraph, reading).text
        pieces += [gap, form]
        firsts.append(length + len(gap))
        length += len(gap) + len(form)
        cursor = paragraph.offset + len(paragraph.text)
    return "".join(pieces), firsts


def _unshadowed(candidates: list[_Candidate]) -> list[_Candidate]:
    """Drop other rules' candidates inside a value-only rule's whole match.

    A kept placeholder is never shadowed, and owners never shadow each other:
    between overlapping owners the ordering decides, so neither secret is lost.
    Nor is a part of a block matched across paragraphs: it runs past the line
    an owner reads (a PEM block after ``private_key: "``), so it competes in
    the ordering instead of leaving its later lines bare.
    """
    owned = [(found.rule, *found.owns) for found in candidates if found.owns is not None]
    return [
        found
        for found in candidates
        if found.preexisting
        or found.owns is not None
        or found.spanning
        or not any(
            rule != found.rule and found.start < to and found.end > since
            for rule, since, to in owned
        )
    ]


def _accept(candidates: list[_Candidate]) -> list[_Candidate]:
    """Start ascending, length descending, rule order; greedily, without overlap."""
    accepted: list[_Candidate] = []
    taken_until = 0
    for found in sorted(candidates, key=lambda found: (found.start, -found.end, found.order)):
        if found.start < taken_until or found.end <= found.start:
            continue
        taken_until = found.end
        accepted.append(found)
    return accepted


# --- masking ----------------------------------------------------------------------------------


def redact(
    text: str, segment_sha256: str, rules: Sequence[Rule], key: bytes = b""
) -> tuple[str, list[Redaction]]:
    """The redacted segment and one ``Redaction`` per accepted match, in text order.

    ``segment_sha256`` (the hash of the unredacted text) salts the placeholder
    digests, so the same secret masks the same way throughout a segment and
    differently in another. With a `key` the digest is an HMAC under it: a
    guess at a masked value can then not be checked against the placeholder by
    anyone without the key (the run keeps it outside --out). The paragraph split
    of the result has the same paragraphs, by count and index, as the original's.
    """
    matches = _scan(text, rules)
    placeholders = _placeholders(text, segment_sha256, matches, key)
    pieces: list[str] = []
    redactions: list[Redaction] = []
    cursor = 0
    for found in matches:
        matched = text[found.start : found.end]
        placeholder = matched if found.preexisting else placeholders[found.rule, matched]
        pieces += [text[cursor : found.start], placeholder]
        size = len(matched.encode("utf-8"))
        redactions.append(
            Redaction(found.rule, found.paragraph, placeholder, size, found.preexisting)
        )
        cursor = found.end
    pieces.append(text[cursor:])
    return "".join(pieces), redactions


def _placeholders(
    text: str, segment_sha256: str, matches: Iterable[_Match], key: bytes = b""
) -> dict[tuple[str, str], str]:
    """``(rule, matched) -> placeholder``, each rule's hex width chosen from all its matches."""
    digests: dict[str, dict[str, str]] = {}
    for found in matches:
        if found.preexisting:
            continue
        by_text = digests.setdefault(found.rule, {})
        matched = text[found.start : found.end]
        if matched not in by_text:
            salted = segment_sha256.encode("ascii") + matched.encode("utf-8")
            by_text[matched] = (
                hmac.new(key, salted, hashlib.sha256).hexdigest()
                if key
                else hashlib.sha256(salted).hexdigest()
            )
    placeholders: dict[tuple[str, str], str] = {}
    for rule, by_text in digests.items():
        width = _distinguishing_width(list(by_text.values()))
        for matched, digest in by_text.items():
            placeholders[rule, matched] = f"«redacted {rule} {digest[:width]}»"
    return placeholders


def _distinguishing_width(digests: list[str]) -> int:
    """The shortest prefix length, at least four, under which every digest is distinct."""
    for width in range(MIN_PLACEHOLDER_HEX, _FULL_HEX):
        if len({digest[:width] for digest in digests}) == len(digests):
            return width
    return _FULL_HEX


# --- what the rest of the pipeline asks -------------------------------------------------------


def scan_answer_text(text: str, rules: Sequence[Rule]) -> list[str]:
    """The rules a model-written string trips, distinct, in order of first hit.

    The answer scan (taguru ADR 0038 §3.3): the same rules, the same per-paragraph
    matching; a placeholder in the string is what the masked text showed and
    trips nothing (a placeholder subject or object is removed elsewhere).
    """
    names: list[str] = []
    for found in _scan(text, rules):
        if not found.preexisting and found.rule not in names:
            names.append(found.rule)
    return names


def is_placeholder(name: str) -> bool:
    """Whether ``name`` is exactly one placeholder, ``«redacted <rule> <4–64 hex>»``."""
    return _PLACEHOLDER.fullmatch(name) is not None


def contains_placeholder(name: str) -> bool:
    """Whether ``name`` holds a placeholder anywhere — not an entity (taguru ADR 0038 §3.3)."""
    return "«" in name and _PLACEHOLDER.search(name) is not None


def stderr_summary(redactions: Sequence[Redaction]) -> str:
    """The per-segment stderr line after ``taguru: extract: <source>: ``; ``""`` for none.

    ``redacted N match(es): aws_access_key ×1 (paragraph 0), email ×2
    (paragraphs 3, 5)`` — N counts what this read masked, rules in order of
    first appearance, each with its distinct paragraphs ascending. Placeholders
    the input already carried are counted apart:
    ``; K pre-existing placeholder(s) kept (paragraph 2)``.
    """
    if not redactions:
        return ""
    masked = [found for found in redactions if not found.preexisting]
    kept = [found.paragraph for found in redactions if found.preexisting]
    line = f"redacted {len(masked)} match(es)"
    if masked:
        line += ": " + ", ".join(
            f"{rule} ×{len(paragraphs)} ({_paragraph_list(paragraphs)})"
            for rule, paragraphs in _paragraphs_by_rule(masked).items()
        )
    if kept:
        line += f"; {len(kept)} pre-existing placeholder(s) kept ({_paragraph_list(kept)})"
    return line


def _paragraphs_by_rule(redactions: Iterable[Redaction]) -> dict[str, list[int]]:
    by_rule: dict[str, list[int]] = {}
    for found in redactions:
        by_rule.setdefault(found.rule, []).append(found.paragraph)
    return by_rule


def _paragraph_list(paragraphs: Iterable[int]) -> str:
    distinct = sorted(set(paragraphs))
    noun = "paragraph" if len(distinct) == 1 else "paragraphs"
    return f"{noun} {', '.join(map(str, distinct))}"
