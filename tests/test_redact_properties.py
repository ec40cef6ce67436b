"""Redaction against generated variants of every shape (issue 37 item 3), not a list.

Each built-in shape is drawn with its own parts (a key's body, an address's local
part, a phone's groups), then varied the ways text carries it: a space character
(every Zs but U+0020) or an invisible format character (every Cf) put inside it,
full-width forms, and the quoting around it — bare, "double", 'single', inside a
JSON string, inside a JSON string inside a JSON string, key=value, key: value.
The property: after redaction no run of four characters of the secret is left
for a reader (read with the invisibles and space characters dropped, NFKC) that
the text around it did not already hold. And a generated corpus of ordinary
prose and code — with the same space and format characters between and inside
its words — comes back unchanged.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass

import pytest
from hypothesis import example, given, note
from hypothesis import strategies as st

from taguru_ray.text.redact import GROUPS, builtin_rules, redact

pytestmark = pytest.mark.fuzz

RULES = builtin_rules(GROUPS)
SALT = "0" * 64
HOLE = "\ue000"  # where the secret goes in a template: private use, never escaped by JSON

SPACES = [chr(p) for p in range(0x110000) if unicodedata.category(chr(p)) == "Zs" and p != 0x20]
FORMATS = [chr(p) for p in range(0x110000) if unicodedata.category(chr(p)) == "Cf"]
INVISIBLE = frozenset(SPACES + FORMATS)
_PLACEHOLDER = re.compile(r"«redacted [a-z0-9_]+ [0-9a-f]{4,64}»")

ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
UPPER_DIGITS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
# Phone and number groups: dashes, dots, spaces, and the spaces and dashes other
# scripts and typesetters use.
GROUP_SEPARATORS = ["-", " ", "\u00a0", "\u2007", "\u202f", "\u3000", "\u2011", "\u2013", "－"]


@dataclass(frozen=True)
class Shape:
    """A secret as written (``secret``) in a template around it (``HOLE`` marks where)."""

    rule: str
    secret: str
    template: str


# --- what a reader sees, independently of the code under test -------------------------------


def seen(text: str) -> str:
    """Invisible and space characters (but U+0020) dropped, then NFKC."""
    kept = "".join(char for char in text if char not in INVISIBLE)
    return unicodedata.normalize("NFKC", kept)


def runs(text: str, size: int = 4) -> set[str]:
    return {text[i : i + size] for i in range(len(text) - size + 1)}


def leaked(shape: Shape) -> set[str]:
    """The four-character runs of the secret a reader still finds after redaction."""
    text = shape.template.replace(HOLE, shape.secret)
    redacted, _ = redact(text, SALT, RULES)
    left = runs(seen(_PLACEHOLDER.sub(HOLE, redacted)))
    around = runs(seen(shape.template))
    return {run for run in runs(seen(shape.secret)) if run in left and run not in around}


# --- the variations ---------------------------------------------------------------------------


def _text(alphabet: str, low: int, high: int) -> st.SearchStrategy[str]:
    return st.text(alphabet=alphabet, min_size=low, max_size=high)


@st.composite
def scattered(draw: st.DrawFn, secret: str) -> str:
    """``secret`` with up to three space or format characters put inside it.

    Only format characters when the secret's own groups are parted by a space
    character: another one there regroups the digits (``0\u00a001\u00a001\u00a00001``
    is no SSN's shape to a reader either) rather than hiding them.
    """
    intruders = FORMATS if any(char in SPACES for char in secret) else SPACES + FORMATS
    chars = list(secret)
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(1, max(len(chars) - 1, 1)))
        chars.insert(at, draw(st.sampled_from(intruders)))
    return "".join(chars)


@st.composite
def widened(draw: st.DrawFn, secret: str) -> str:
    """``secret`` with none, some or all of its ASCII in full-width forms."""
    share = draw(st.sampled_from([0.0, 0.5, 1.0]))
    flips = draw(st.lists(st.floats(0, 1), min_size=len(secret), max_size=len(secret)))
    return "".join(
        chr(ord(char) + 0xFEE0) if "!" <= char <= "~" and flip < share else char
        for char, flip in zip(secret, flips, strict=True)
    )


def varied(secret: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return secret.flatmap(widened).flatmap(scattered)


def _json(text: str) -> str:
    return json.dumps({"note": text}, ensure_ascii=False)


QUOTINGS = {
    "bare": f"see {HOLE} now",
    "double": f'see "{HOLE}" now',
    "single": f"see '{HOLE}' now",
    "json": _json(f'see "{HOLE}" now'),
    "json_in_json": json.dumps(_json(f'see "{HOLE}" now'), ensure_ascii=False),
    "key_equals": f"ref={HOLE}",
    "key_colon": f"ref: {HOLE}",
}


def quoted(rule: str, secret: st.SearchStrategy[str]) -> st.SearchStrategy[Shape]:
    return st.builds(
        lambda value, template: Shape(rule, value, template),
        varied(secret),
        st.sampled_from(sorted(QUOTINGS.values())),
    )


# --- the shapes -------------------------------------------------------------------------------


def _keyed(prefix: st.SearchStrategy[str], body: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.tuples(prefix, body).map("".join)


KEYS = st.one_of(
    _keyed(st.sampled_from(["AKIA", "ASIA"]), _text(UPPER_DIGITS, 16, 16)),
    _keyed(st.sampled_from(["ghp_", "gho_", "ghs_"]), _text(ALNUM, 36, 40)),
    _keyed(st.just("sk-"), _text(ALNUM, 20, 40)),
    _keyed(st.sampled_from(["xoxb-", "xoxp-"]), _text(ALNUM, 10, 30)),
    _keyed(st.just("AIza"), _text(ALNUM, 35, 35)),
    st.tuples(_text(ALNUM, 8, 20), _text(ALNUM, 8, 20), _text(ALNUM, 8, 20)).map(
        lambda parts: f"eyJ{parts[0]}.eyJ{parts[1]}.{parts[2]}"
    ),
)

EMAILS = st.tuples(
    _text("abcdefghijklmnopqrstuvwxyz", 1, 1),
    _text("abcdefghijklmnopqrstuvwxyz0123456789._+-", 2, 12),
    _text("abcdefghijklmnopqrstuvwxyz0123456789", 1, 1),
    _text("abcdefghijklmnopqrstuvwxyz", 3, 10),
    st.sampled_from(["com", "co.jp", "example", "org"]),
).map(lambda p: f"{p[0]}{p[1]}{p[2]}@{p[3]}.{p[4]}")


def _digits(size: int) -> st.SearchStrategy[str]:
    return _text("0123456789", size, size)


@st.composite
def us_phones(draw: st.DrawFn) -> str:
    area, exchange, line = draw(_digits(3)), draw(_digits(3)), draw(_digits(4))
    if draw(st.booleans()):
        return f"({area}) {exchange}{draw(st.sampled_from(['-', '.', ' ']))}{line}"
    separator = draw(st.sampled_from([*GROUP_SEPARATORS, "."]))
    lead = draw(st.sampled_from(["", f"1{separator}"]))
    return f"{lead}{area}{separator}{exchange}{separator}{line}"


@st.composite
def japanese_phones(draw: st.DrawFn) -> str:
    separator = draw(st.sampled_from(GROUP_SEPARATORS))
    head = draw(st.sampled_from(["090", "080", "03", "06", "0120"]))
    middle = draw(_digits(3 if head == "0120" else 4))
    tail = draw(_digits(3 if head == "0120" else 4))
    return f"{head}{separator}{middle}{separator}{tail}"


@st.composite
def us_ssns(draw: st.DrawFn) -> str:
    area = draw(st.integers(1, 899).filter(lambda n: n != 666))
    group, serial = draw(st.integers(1, 99)), draw(st.integers(1, 9999))
    separator = draw(st.sampled_from(GROUP_SEPARATORS))
    return f"{area:03d}{separator}{group:02d}{separator}{serial:04d}"


def _grouped(digits: str, separator: str) -> str:
    return separator.join(digits[i : i + 4] for i in range(0, len(digits), 4))


@st.composite
def my_numbers(draw: st.DrawFn) -> str:
    body = [int(d) for d in draw(_digits(11))]
    weighted = sum(
        digit * (n + 1 if n <= 6 else n - 5) for n, digit in enumerate(reversed(body), start=1)
    )
    check = 0 if weighted % 11 <= 1 else 11 - weighted % 11
    separator = draw(st.sampled_from(["", " ", "-", "\u00a0", "\u3000"]))
    return _grouped("".join(map(str, body)) + str(check), separator)


@st.composite
def cards(draw: st.DrawFn) -> str:
    body = "4" + draw(_digits(14))
    total = 0
    for position, char in enumerate(reversed(body)):
        doubled = int(char) * 2 if position % 2 == 0 else int(char)
        total += doubled - 9 if doubled > 9 else doubled
    separator = draw(st.sampled_from(["", " ", "-", "\u00a0", "\u2009"]))
    return _grouped(body + str((10 - total % 10) % 10), separator)


# A credential value: what a password or token is written with, no quote, space,
# comma, semicolon or backslash (those end a bare value).
VALUES = _text(ALNUM + "_-.!#$%^&*+/", 6, 24)
NAMES = [
    "password",
    "DB_PASSWORD",
    "passwd",
    "pass",
    "db_pass",
    "api_key",
    "apiKey",
    "client_secret",
    "access_token",
    "passphrase",
    "パスワード",
]


def _assignments(name: str) -> list[str]:
    """Every way a name is given a value: the quoting levels the converters meet too."""
    command = f'export {name}="{HOLE}"'
    return [
        f"{name}={HOLE}",
        f"{name}: {HOLE}",
        f'{name} = "{HOLE}"',
        f"{name}='{HOLE}'",
        json.dumps({name: HOLE}, ensure_ascii=False),
        f"{{'{name}': '{HOLE}'}}",
        _json(command),
        json.dumps(_json(command), ensure_ascii=False),
        json.dumps(json.dumps({name: HOLE}, ensure_ascii=False), ensure_ascii=False),
    ]


CREDENTIALS = st.builds(
    lambda value, template: Shape("credential_assignment", value, template),
    varied(VALUES),
    st.sampled_from(NAMES).flatmap(lambda name: st.sampled_from(_assignments(name))),
)
HEADERS = st.builds(
    lambda token, template: Shape("authorization_header", token, template),
    varied(_text(ALNUM + "._-", 12, 40)),
    st.sampled_from(
        [
            f"Authorization: Bearer {HOLE}",
            f'{{"Authorization": "Basic {HOLE}"}}',
            _json(f"curl -H 'Authorization: Bearer {HOLE}' https://api.example"),
        ]
    ),
)
USERINFO = st.builds(
    lambda password, template: Shape("url_userinfo", password, template),
    varied(_text(ALNUM, 6, 20)),
    st.sampled_from([f"https://deploy:{HOLE}@db.example/app", _json(f"pg://u:{HOLE}@h/db")]),
)

SHAPES = st.one_of(
    quoted("key", KEYS),
    quoted("email", EMAILS),
    quoted("phone", st.one_of(us_phones(), japanese_phones())),
    quoted("us_ssn", us_ssns()),
    quoted("my_number", my_numbers()),
    quoted("payment_card", cards()),
    CREDENTIALS,
    HEADERS,
    USERINFO,
)


@given(SHAPES)
@example(Shape("email", "taro\u00a0yamada@example.com", f"mail {HOLE} now"))
@example(Shape("phone", "(555) 123-4567", QUOTINGS["bare"]))
@example(Shape("phone", "555 123 4567", QUOTINGS["key_colon"]))
@example(Shape("us_ssn", "123-45-6789", QUOTINGS["json"]))
@example(Shape("credential_assignment", "hunter2value", json.dumps({"pass": HOLE})))
@example(Shape("key", "AKIAIOSFO\u00a0DNN7EXAMPLE", QUOTINGS["single"]))
def test_no_run_of_a_secret_survives_redaction(shape: Shape) -> None:
    note(repr(shape.template.replace(HOLE, shape.secret)))
    assert leaked(shape) == set()


# --- ordinary text stays as it is -----------------------------------------------------------

WORDS = [
    "the", "release", "build", "was", "shipped", "after", "review", "bypass", "compass",
    "passage", "passes", "token", "tokens", "secret", "keys", "password", "phone", "email",
    "contact", "mail", "pass", "Mr.", "Smith", "Taro", "Yamada", "sake", "brewery",
    "リリース", "手順", "東京都千代田区", "杜氏", "電話", "メール", "パスワード",
]  # fmt: skip
NUMBERS = [
    "2024", "1999", "42", "7", "305", "v1.2.3", "10.0.12", "2024-01-15", "２０２４－０１－１５",
    "12:34", "１２：３４", "$1,299.00", "¥1,234,567", "42%", "192.168.100.200", "10.0.0.1",
    "〒100-0001", "ISBN 978-4-10-109205-8", "05-12-2024", "3.14159", "1\u202f234",
    "1\u00a0234\u00a0567",
]  # fmt: skip
CODE = [
    "x = y + 1",
    "for i in range(10):",
    '{"max_tokens": 4096, "token_type": "bearer", "password_min_length": 8}',
    "bypass: true",
    "compass = north",
    "passwordless = True",
    "token is not an assignment",
    "def handler(event): pass",
    "SELECT id FROM users WHERE active",
]
GAPS = [" ", "\u00a0", "\u202f", "\u2009", "\u3000", "\u200b", ", ", ". ", "\u00a0\u00a0"]


@st.composite
def ordinary_text(draw: st.DrawFn) -> str:
    """Words, numbers and code joined by spaces of every kind; no two numbers adjacent,
    since three bare numbers in a row (555 123 4567) is a phone's very shape."""
    pieces: list[str] = []
    for _ in range(draw(st.integers(1, 30))):
        kind = draw(st.sampled_from(["word", "word", "number", "code"]))
        if kind == "number" and pieces and pieces[-1] in NUMBERS:
            kind = "word"
        choices = {"word": WORDS, "number": NUMBERS, "code": CODE}[kind]
        piece = draw(st.sampled_from(choices))
        if kind == "word" and draw(st.booleans()):
            piece = draw(scattered(piece))
        if pieces:
            pieces.append(draw(st.sampled_from(GAPS)))
        pieces.append(piece)
    return "".join(pieces)


@given(ordinary_text())
def test_ordinary_prose_and_code_are_left_as_written(text: str) -> None:
    assert redact(text, SALT, RULES) == (text, [])
