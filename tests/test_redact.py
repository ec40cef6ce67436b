"""The redaction gate (taguru ADR 0038, redact2): what is masked, how, and how it is accounted
for."""

from __future__ import annotations

import hashlib
import json
import random
import time
import unicodedata
from pathlib import Path

import pytest

from taguru_ray.text.matching_form import matching_form
from taguru_ray.text.paragraphs import split_paragraphs
from taguru_ray.text.redact import (
    BUILTIN_NAMES,
    GROUPS,
    PII,
    SECRETS,
    Redaction,
    RulesError,
    builtin_rules,
    contains_placeholder,
    groups_from_setting,
    is_placeholder,
    my_number_check_digit_holds,
    parse_rules_file,
    payment_card_holds,
    phone_digits_plausible,
    redact,
    redaction_input,
    scan_answer_text,
    stderr_summary,
)

DOC = "0" * 64
ALL = builtin_rules(GROUPS)
AWS = "AKIAIOSFODNN7EXAMPLE"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abcdefghij"
GITHUB = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
GOOGLE = "AIzaSyD-EXAMPLE_key_0123456789abcdefghi"  # AIza + 35
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIB\nAAAA\n-----END RSA PRIVATE KEY-----"


def masked(text: str, rules: list | None = None) -> list[tuple[str, str]]:
    """(rule, original text) per redaction, read back by walking the redacted output."""
    redacted, redactions = redact(text, DOC, ALL if rules is None else rules)
    pairs: list[tuple[str, str]] = []
    cursor, origin = 0, 0
    for found in redactions:
        at = redacted.index(found.placeholder, cursor)
        origin += at - cursor
        assert text[origin - (at - cursor) : origin] == redacted[cursor:at]
        value = _utf8_prefix(text[origin:], found.bytes)
        pairs.append((found.rule, value))
        cursor, origin = at + len(found.placeholder), origin + len(value)
    assert text[origin:] == redacted[cursor:]
    return pairs


def _utf8_prefix(text: str, size: int) -> str:
    for end in range(len(text) + 1):
        if len(text[:end].encode("utf-8")) == size:
            return text[:end]
    raise AssertionError(f"no prefix of {size} bytes")


def rules_of(text: str, rules: list | None = None) -> list[str]:
    return [found.rule for found in redact(text, DOC, ALL if rules is None else rules)[1]]


# --- the rule set -----------------------------------------------------------------------------


def test_built_ins_are_in_the_adrs_order_and_filter_by_group() -> None:
    assert [rule.name for rule in ALL] == [
        "aws_access_key",
        "github_token",
        "openai_key",
        "slack_token",
        "google_api_key",
        "private_key",
        "jwt",
        "credential_assignment",
        "authorization_header",
        "url_userinfo",
        "email",
        "phone",
        "my_number",
        "us_ssn",
        "payment_card",
    ]
    assert list(BUILTIN_NAMES) == [rule.name for rule in ALL]
    assert [rule.name for rule in builtin_rules(frozenset({PII}))] == [
        "email",
        "phone",
        "my_number",
        "us_ssn",
        "payment_card",
    ]
    assert len(builtin_rules(frozenset({SECRETS}))) == 10
    assert builtin_rules(frozenset()) == []
    with pytest.raises(ValueError, match="secrets and pii"):
        builtin_rules(frozenset({"names"}))


def test_the_setting_names_its_groups() -> None:
    assert groups_from_setting("") == frozenset()
    assert groups_from_setting("both") == GROUPS
    assert groups_from_setting("secrets") == frozenset({SECRETS})
    assert groups_from_setting("pii") == frozenset({PII})
    with pytest.raises(ValueError):
        groups_from_setting("all")


# --- every built-in, in English and in Japanese -------------------------------------------------

PLANTED = [
    ("aws_access_key", f"key {AWS} here", f"アクセスキーは {AWS} です。", AWS),
    ("github_token", f"found {GITHUB} in the log", f"トークン：{GITHUB}。", GITHUB),
    (
        "openai_key",
        "use sk-abcdefghijklmnopqrstuvwxyz now",
        "OpenAIのキー「sk-abcdefghijklmnopqrstuvwxyz」を使う",
        "sk-abcdefghijklmnopqrstuvwxyz",
    ),
    (
        "slack_token",
        "slack xoxb-1234567890-abcdef here",
        "Slack：xoxb-1234567890-abcdef。",
        "xoxb-1234567890-abcdef",
    ),
    ("google_api_key", f"key {GOOGLE} here", f"APIキー（{GOOGLE}）", GOOGLE),
    ("private_key", f"the key:\n{PEM}\ndone", f"鍵：\n{PEM}\nここまで", PEM),
    ("jwt", f"bare {JWT} here", f"ヘッダーに {JWT} を送る", JWT),
    ("credential_assignment", 'password = "hunter2";', "設定に DB_PASSWORD=s3cr3t と書く", None),
    (
        "authorization_header",
        "Authorization: Basic dXNlcjpwYXNz",
        "ヘッダー Authorization: Bearer abc123.def456 を付ける",
        None,
    ),
    (
        "url_userinfo",
        "https://user:s3cr3t@example.com/path",
        "接続先 postgres://app:pa55word@db.internal:5432/app です",
        None,
    ),
    (
        "email",
        "mail a.b+c@example.com today",
        "問い合わせ：taro.yamada@example.co.jp まで",
        None,
    ),
    ("phone", "call +81 3 1234 5678 now", "電話：03-1234-5678（平日）", None),
    ("my_number", "number 123456789018 on file", "マイナンバー：1234 5678 9018 を提出", None),
    ("payment_card", "card 5555 5555 5555 4444 expires", "カード番号：4111-1111-1111-1111。", None),
]

EXPECTED_VALUES = {
    "credential_assignment": ("hunter2", "s3cr3t"),
    "authorization_header": ("dXNlcjpwYXNz", "abc123.def456"),
    "url_userinfo": ("s3cr3t", "pa55word"),
    "email": ("a.b+c@example.com", "taro.yamada@example.co.jp"),
    "phone": ("+81 3 1234 5678", "03-1234-5678"),
    "my_number": ("123456789018", "1234 5678 9018"),
    "payment_card": ("5555 5555 5555 4444", "4111-1111-1111-1111"),
}


@pytest.mark.parametrize(
    ("rule", "english", "japanese", "value"), PLANTED, ids=[p[0] for p in PLANTED]
)
def test_each_built_in_masks_its_planted_value_in_english_and_japanese(
    rule: str, english: str, japanese: str, value: str | None
) -> None:
    values = EXPECTED_VALUES.get(rule, (value, value))
    for text, expected in zip((english, japanese), values, strict=True):
        assert masked(text) == [(rule, expected)], text
        redacted, _ = redact(text, DOC, ALL)
        assert expected not in redacted
        assert f"«redacted {rule} " in redacted


def test_value_only_rules_keep_the_name_around_the_value() -> None:
    redacted, _ = redact('password = "hunter2"; api_key: abc123def', DOC, ALL)
    assert redacted.startswith('password = "«redacted credential_assignment ')
    assert "; api_key: «redacted credential_assignment " in redacted
    redacted, _ = redact("Authorization: Bearer abc.def", DOC, ALL)
    assert redacted.startswith("Authorization: Bearer «redacted authorization_header ")
    redacted, _ = redact("https://user:s3cr3t@example.com/path", DOC, ALL)
    assert redacted.startswith("https://user:«redacted url_userinfo ")
    assert redacted.endswith("»@example.com/path")


def test_japanese_and_international_phone_forms() -> None:
    text = (
        "tel 03-1234-5678 or (03) 1234-5678 or 090-1234-5678 or 0120-123-456 "
        "or +81 3 1234 5678 or +1 415 555 0132"
    )
    assert rules_of(text) == ["phone"] * 6


def test_credential_keywords_may_end_an_identifier_but_not_continue_into_one() -> None:
    text = (
        "DB_PASSWORD=hunter2\nAWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI\nGITHUB_TOKEN=notreal\n"
        "SECRET_KEY_BASE=k2\nclient_secret: cs\nX-Api-Key: ak"
    )
    assert [value for _, value in masked(text)] == [
        "hunter2",
        "wJalrXUtnFEMI",
        "notreal",
        "k2",
        "cs",
        "ak",
    ]
    settings = "max_tokens: 4096\ntokenizer: bert\npassword_min_length: 8\npasswordless: true"
    assert rules_of(settings) == []


def test_the_url_scheme_is_case_insensitive() -> None:
    assert masked("HTTPS://user:s3cr3t@example.com/") == [("url_userinfo", "s3cr3t")]


@pytest.mark.parametrize(
    "text",
    [
        "会議は 2026-09-05 に、10.0.0.1 と 192.168.0.1 の間で。",
        "the 12-digit 123456789017 has a wrong check digit",
        "マイナンバー：1234 5678 9017（検査用数字が違う）",
        "a card failing Luhn: 5555 5555 5555 4445",
        "no issuer range: 9111111111111110",
        "bare digit runs: 0312345678 12345678 ¥1234567890 第二条",
        "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "〒100-0001 東京都千代田区千代田1-1 の山田太郎さん",
        "token is not an assignment",
    ],
)
def test_what_is_not_judged_is_left_alone(text: str) -> None:
    assert redact(text, DOC, ALL) == (text, [])


def test_a_card_failing_luhn_is_no_card_though_a_12_digit_window_may_be_a_my_number() -> None:
    # As in the reference: 4111 1111 1111 happens to carry a valid 個人番号 check digit.
    assert rules_of("4111 1111 1111 1112") == ["my_number"]
    assert masked("4111 1111 1111 1112") == [("my_number", "4111 1111 1111")]


def test_my_number_check_digit_follows_the_formula() -> None:
    # P1..P11 from the right of 12345678901 weighted by Q = 2..7, 2..6: 212; 212 mod 11 = 3.
    assert my_number_check_digit_holds("123456789018")
    assert my_number_check_digit_holds("1234-5678-9018")
    assert not my_number_check_digit_holds("123456789017")
    assert not my_number_check_digit_holds("12345678901")
    # A remainder of 0 or 1 gives check digit 0; a full-width digit never counts.
    assert my_number_check_digit_holds("000000000000")
    assert not my_number_check_digit_holds("12345678901８")


def test_payment_cards_need_an_issuer_range_and_luhn() -> None:
    for card in [
        "4111 1111 1111 1111",
        "5555-5555-5555-4444",
        "2221000000000009",
        "378282246310005",
        "3530111333300000",
        "6011111111111117",
        "6500000000000002",
    ]:
        assert payment_card_holds(card), card
        assert rules_of(card) == ["payment_card"], card
    assert not payment_card_holds("4111 1111 1111 1112")
    assert not payment_card_holds("9111111111111110")
    assert not payment_card_holds("411111111111")  # 12 digits


# --- placeholders -------------------------------------------------------------------------------


def digest(key: str, salt: str = DOC) -> str:
    return hashlib.sha256(salt.encode("ascii") + key.encode("utf-8")).hexdigest()


def test_placeholder_is_rule_and_a_salted_digest_prefix_stable_within_a_segment() -> None:
    other = "AKIAI44QH8DHBEXAMPLE"
    text = f"k1 {AWS} again {AWS} other {other}\n\nmail me@example.com"
    redacted, redactions = redact(text, DOC, ALL)
    assert [found.placeholder for found in redactions[:3]] == [
        f"«redacted aws_access_key {digest(AWS)[:4]}»",
        f"«redacted aws_access_key {digest(AWS)[:4]}»",
        f"«redacted aws_access_key {digest(other)[:4]}»",
    ]
    assert redactions[0].placeholder != redactions[2].placeholder
    assert redactions[3] == Redaction(
        "email", 1, f"«redacted email {digest('me@example.com')[:4]}»", 14
    )
    assert redactions[0].bytes == len(AWS) and not redactions[0].preexisting
    assert AWS not in redacted and "me@example.com" not in redacted
    assert redact(text, DOC, ALL) == (redacted, redactions)
    assert redact(text, "1" * 64, ALL)[1][0].placeholder != redactions[0].placeholder


def colliding_keys() -> tuple[str, str]:
    """Two distinct AWS-shaped keys whose salted digests share their first four hex digits."""
    seen: dict[str, str] = {}
    for number in range(1_000_000):
        key = f"AKIA{number:016d}"
        prefix = digest(key)[:4]
        if prefix in seen:
            return seen[prefix], key
        seen[prefix] = key
    raise AssertionError("a 16-bit collision within a million keys")


def test_a_collision_lengthens_every_placeholder_of_that_rule_only() -> None:
    first, second = colliding_keys()
    third = "AKIAI44QH8DHBEXAMPLE"
    _, redactions = redact(f"{first} and {second} and {first} and {third} me@example.com", DOC, ALL)
    width = next(
        w for w in range(4, 65) if len({digest(key)[:w] for key in (first, second, third)}) == 3
    )
    assert width > 4
    assert [found.placeholder for found in redactions[:4]] == [
        f"«redacted aws_access_key {digest(key)[:width]}»" for key in (first, second, first, third)
    ]
    assert redactions[4].placeholder == f"«redacted email {digest('me@example.com')[:4]}»"


def test_preexisting_placeholders_are_kept_and_counted_apart() -> None:
    text = f"was «redacted aws_access_key 1a2b» and is {AWS}"
    redacted, redactions = redact(text, DOC, ALL)
    assert (
        redacted
        == f"was «redacted aws_access_key 1a2b» and is «redacted aws_access_key {digest(AWS)[:4]}»"
    )
    assert redactions[0] == Redaction(
        "preexisting",
        0,
        "«redacted aws_access_key 1a2b»",
        len("«redacted aws_access_key 1a2b»".encode()),
        True,
    )
    assert not redactions[1].preexisting
    again, recount = redact(redacted, DOC, ALL)
    assert again == redacted
    assert [found.preexisting for found in recount] == [True, True]


def test_a_placeholder_is_recognised_only_in_its_exact_form() -> None:
    assert is_placeholder("«redacted emp_id 3f9a»")
    assert is_placeholder("«redacted email " + "a" * 64 + "»")
    assert not is_placeholder("«redacted email 3f9»")
    assert not is_placeholder("«redacted email 3F9A»")
    assert not is_placeholder("x «redacted email 3f9a»")
    assert contains_placeholder("x «redacted email 3f9a» y")
    assert not contains_placeholder("redacted email 3f9a")


# --- overlaps and paragraphs ------------------------------------------------------------------


def test_a_value_only_rule_owns_its_whole_match() -> None:
    # The bearer token is e-mail-shaped and the URL's secret holds an AWS key: one redaction each.
    assert masked("Authorization: Bearer a@b.co") == [("authorization_header", "a@b.co")]
    assert masked(f"https://u:{AWS}@h") == [("url_userinfo", AWS)]
    # Between two owners the earlier, longer value wins and holds the other's secret.
    assert masked("token: https://user:s3cr3t@host") == [
        ("credential_assignment", "https://user:s3cr3t@host")
    ]


def test_overlaps_resolve_earliest_then_longest_then_rule_order() -> None:
    rules, _ = parse_rules_file(
        "mail\t[a-z]+@example\\.com\nprefix\tme@exa\nwide\tsay me\n", path="r.tsv"
    )
    every = ALL + rules
    # Same span as a built-in: the built-in comes first in rule order.
    assert rules_of("me@example.com", ALL + rules[:1]) == ["email"]
    # Same start, shorter: the longer candidate wins.
    assert rules_of("me@example.com", ALL + rules[1:2]) == ["email"]
    # An earlier start wins even when shorter.
    assert rules_of("say me@example.com", every) == ["wide"]


def test_spans_that_only_touch_are_both_taken() -> None:
    assert rules_of(f"https://u:p@{AWS}") == ["url_userinfo", "aws_access_key"]
    text = f"-----BEGIN PRIVATE KEY-----\nX\n-----END PRIVATE KEY-----{AWS}"
    assert rules_of(text) == ["private_key", "aws_access_key"]


def test_matching_is_per_paragraph_and_indices_are_unchanged() -> None:
    text = (
        f"intro\n\n{PEM}\n\nmail me@example.com\r\nand {AWS}\n\n"
        "-----BEGIN PRIVATE KEY-----\nAAAA\n\n-----END PRIVATE KEY-----\n"
    )
    redacted, redactions = redact(text, DOC, ALL)
    assert [(found.rule, found.paragraph) for found in redactions] == [
        ("private_key", 1),
        ("email", 2),
        ("aws_access_key", 2),
        ("private_key", 3),
        ("private_key", 4),
    ]
    before, after = split_paragraphs(text), split_paragraphs(redacted)
    assert [p.index for p in after] == [p.index for p in before] == [0, 1, 2, 3, 4]
    assert after[1].text == redactions[0].placeholder
    # A key block a blank line splits is masked paragraph by paragraph.
    assert [after[3].text, after[4].text] == [redactions[3].placeholder, redactions[4].placeholder]
    assert all("\n" not in found.placeholder for found in redactions)


# --- the user's rules file ----------------------------------------------------------------------

GOOD_FILE = (
    "# redact-rules.tsv — one rule per line, name TAB regex\r\n"
    "emp_id\t\\bEMP-\\d{6}\\b\r\n"
    "\r\n"
    "  # an indented comment\n"
    "ticket\t\\bTCK-[0-9]{4,}\\b\n"
    "customer_code\t\\bC[A-Z]{2}-\\d{5}\\b"
)


def test_a_good_rules_file_extends_the_built_ins_in_file_order() -> None:
    rules, sha = parse_rules_file(GOOD_FILE, path="redact-rules.tsv")
    assert [rule.name for rule in rules] == ["emp_id", "ticket", "customer_code"]
    assert {rule.group for rule in rules} == {"user"}
    assert sha == hashlib.sha256(GOOD_FILE.encode("utf-8")).hexdigest()
    assert parse_rules_file(GOOD_FILE.encode("utf-8"), path="r")[1] == sha
    text = "EMP-123456 の連絡先は me@example.com、TCK-0042 参照、顧客 CAB-12345。"
    redacted, redactions = redact(text, DOC, ALL + rules)
    assert [found.rule for found in redactions] == ["emp_id", "email", "ticket", "customer_code"]
    assert redacted.startswith(f"«redacted emp_id {digest('EMP-123456')[:4]}» の連絡先は")


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("emp_id \\d+\n", "line 1: expected name<TAB>regex, found no tab — separate"),
        ("# c\nEmp-Id\t\\d+\n", "line 2: rule name 'Emp-Id' is not [a-z0-9_]+"),
        ("\t\\d+\n", "line 1: rule name '' is not [a-z0-9_]+"),
        ("\n\nemail\t\\d+\n", "line 3: 'email' is a built-in rule's name — give the rule another"),
        ("preexisting\t\\d+\n", "line 1: 'preexisting' is reserved"),
        ("a\t\\d+\n\n# x\na\t\\w+\n", "line 4: rule 'a' given twice (first at line 1) — rename"),
        ("a\t\n", "line 1: rule 'a' has an empty pattern — write the regex"),
        ("a\t\\d+\nb\t(\n", "line 2: rule 'b': the pattern does not compile ("),
        ("a\tfoo(?=bar)\n", "line 1: rule 'a': look-around"),
        ("a\t(?!x)y\n", "line 1: rule 'a': look-around"),
        ("a\t(?<=x)y\n", "line 1: rule 'a': look-around"),
        ("a\t(?<!x)y\n", "line 1: rule 'a': look-around"),
    ],
)
def test_every_bad_line_is_refused_with_its_path_and_line(text: str, needle: str) -> None:
    with pytest.raises(RulesError) as refused:
        parse_rules_file(text, path="conf/rules.tsv")
    message = str(refused.value)
    assert message.startswith("--redact-rules: conf/rules.tsv: ")
    assert needle in message
    assert isinstance(refused.value, ValueError)


def test_look_around_spelled_inside_a_class_or_escaped_is_literal() -> None:
    rules, _ = parse_rules_file("a\t[(?=]x\nb\t\\(?=y\nc\t[]](?:z)\n", path="r")
    assert [rule.name for rule in rules] == ["a", "b", "c"]


def test_a_rules_file_that_is_not_utf8_is_refused() -> None:
    with pytest.raises(RulesError, match=r"r\.tsv: is not UTF-8"):
        parse_rules_file(b"a\t\xff\n", path="r.tsv")


# --- the manifest value, stderr, the answer scan ------------------------------------------------


def test_redaction_input_names_version_groups_and_rules_digest() -> None:
    sha = "ab" * 32
    assert redaction_input(frozenset(), None) == ""
    assert redaction_input(GROUPS, None) == "redact2"
    assert redaction_input(frozenset({SECRETS}), None) == "redact2:secrets"
    assert redaction_input(frozenset({PII}), None) == "redact2:pii"
    assert redaction_input(GROUPS, sha) == f"redact2+{sha}"
    assert redaction_input(frozenset({PII}), sha) == f"redact2:pii+{sha}"
    with pytest.raises(ValueError, match="needs --redact"):
        redaction_input(frozenset(), sha)
    with pytest.raises(ValueError, match="64 lowercase hex"):
        redaction_input(GROUPS, "abc")


def test_stderr_summary_counts_by_rule_and_paragraph_never_content() -> None:
    found = [
        Redaction("aws_access_key", 0, "«redacted aws_access_key 1a2b»", 20),
        Redaction("email", 3, "«redacted email 3c4d»", 14),
        Redaction("email", 5, "«redacted email 5e6f»", 14),
    ]
    assert stderr_summary(found) == (
        "redacted 3 match(es): aws_access_key ×1 (paragraph 0), email ×2 (paragraphs 3, 5)"
    )
    _, redactions = redact(f"{AWS}\n\nx\n\ny\n\nme@example.com and you@example.com", DOC, ALL)
    assert stderr_summary(redactions) == (
        "redacted 3 match(es): aws_access_key ×1 (paragraph 0), email ×2 (paragraph 3)"
    )
    kept = Redaction("preexisting", 2, "«redacted email 3c4d»", 23, True)
    assert stderr_summary([*found[:1], kept]) == (
        "redacted 1 match(es): aws_access_key ×1 (paragraph 0); "
        "1 pre-existing placeholder(s) kept (paragraph 2)"
    )
    assert (
        stderr_summary([kept])
        == "redacted 0 match(es); 1 pre-existing placeholder(s) kept (paragraph 2)"
    )
    assert stderr_summary([]) == ""


def test_the_answer_scan_names_each_rule_a_model_string_trips() -> None:
    assert scan_answer_text("contact me@example.com or you@example.com", ALL) == ["email"]
    assert scan_answer_text(f"uses {AWS} via 03-1234-5678", ALL) == ["aws_access_key", "phone"]
    assert scan_answer_text("担当者は «redacted email 3c4d» です", ALL) == []
    assert scan_answer_text("社長", ALL) == []
    rules, _ = parse_rules_file("emp_id\t\\bEMP-\\d{6}\\b\n", path="r")
    assert scan_answer_text("EMP-123456", ALL + rules) == ["emp_id"]


# --- the engine: Python's backtracking must not change or slow what Rust's finds ----------------


@pytest.mark.parametrize("name", ["email", "url_userinfo"])
def test_anchored_search_finds_exactly_what_finditer_finds(name: str) -> None:
    (rule,) = [rule for rule in ALL if rule.name == name]
    pieces = ["a", "b", ".", "@", ":", "/", "+", "-", " ", "K", "ſ", "あ", "://", "u:p@", "x.co"]
    draw = random.Random(38)
    for _ in range(3000):
        text = "".join(draw.choice(pieces) for _ in range(draw.randint(0, 16)))
        assert [m.span() for m in rule.finditer(text)] == [
            m.span() for m in rule.pattern.finditer(text)
        ], text


def test_a_long_dotted_run_is_scanned_in_linear_time() -> None:
    text = "a." * 100_000 + "@ and http" + "a+" * 100_000 + "://"
    started = time.perf_counter()
    assert redact(text, DOC, ALL)[1] == []
    assert time.perf_counter() - started < 5


# --- shapes that once reached the model verbatim (issue 16, item 8) ---------------------------

AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
KEY_LINES = (
    "MIIEpAIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MhgHcTz6sE2I2yPB",
    "aNeuyL1nO6Cw0oTJ9hdkq1ZeCfW1zHLPS0K2L1nO6Cw0oTJ9hdkq1ZeCfW1zHLP",
    "kq1Ze0oTJ9hd==",
)
DEK_IV = "3F17F5316E2BAC89A1B2C3D4E5F60718"
ENCRYPTED_PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "Proc-Type: 4,ENCRYPTED\n"
    f"DEK-Info: AES-128-CBC,{DEK_IV}\n"
    "\n" + "\n".join(KEY_LINES) + "\n-----END RSA PRIVATE KEY-----"
)
EXCERPT_LINES = (
    "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj",
    "MzEfYyjiWA4R4/M2bS1GB4t7NXp98C3SC6dVMvDuictGeurT8jNbvJZHtCSuYEvu",
    "NMoSfm76oqFvAp8Gy0iz5sxjZmSnXyCdPEovGhLa0VzMaQ8s",
)
PEM_EXCERPT = "-----BEGIN PRIVATE KEY-----\n" + "\n".join(EXCERPT_LINES)

# (id, text, the rules that mask it in order, the secrets none of which may survive)
SHAPES = [
    (
        "full_width_phones",
        "携帯：０９０－１２３４－５６７８、会社：０３－１２３４－５６７８",
        ["phone", "phone"],
        ["０９０－１２３４－５６７８", "０３－１２３４－５６７８"],
    ),
    (
        "full_width_card",
        "カード番号 ４１１１　１１１１　１１１１　１１１１ で決済",
        ["payment_card"],
        ["４１１１　１１１１　１１１１　１１１１"],
    ),
    (
        "full_width_email",
        "連絡先ｔａｒｏ＠ｅｘａｍｐｌｅ．ｃｏｍまで",
        ["email"],
        ["ｔａｒｏ＠ｅｘａｍｐｌｅ．ｃｏｍ"],
    ),
    (
        "card_with_no_break_spaces",
        "card 4111\u00a01111\u00a01111\u00a01111 on file",
        ["payment_card"],
        ["4111\u00a01111\u00a01111\u00a01111"],
    ),
    (
        "email_with_a_zero_width_space",
        "write to taro\u200b@example.com today",
        ["email"],
        ["taro\u200b@example.com"],
    ),
    (
        "json_password",
        '{"user": "taro", "password": "hunter2-secret"}',
        ["credential_assignment"],
        ["hunter2-secret"],
    ),
    (
        "json_aws_secret_access_key",
        f'{{"AccessKeyId": "{AWS}", "SecretAccessKey": "{AWS_SECRET}"}}',
        ["aws_access_key", "credential_assignment"],
        [AWS, AWS_SECRET],
    ),
    (
        "python_api_key",
        "settings = {'api_key': 'abc123def456ghi789jkl'}",
        ["credential_assignment"],
        ["abc123def456ghi789jkl"],
    ),
    (
        "quoted_value_with_spaces",
        '"password": "correct horse battery staple"',
        ["credential_assignment"],
        ["correct horse battery staple", "horse", "staple"],
    ),
    (
        "oauth_and_cloud_names",
        '"client_secret": "cs-9f8e7d6c5b4a", "access_token": "ya29.a0AfH6SMBx", '
        '"private_key_id": "4f1e2d3c4b5a69788796a5b4c3d2e1f0a9b8c7d6", '
        f"aws_secret_access_key = {AWS_SECRET}",
        ["credential_assignment"] * 4,
        [
            "cs-9f8e7d6c5b4a",
            "ya29.a0AfH6SMBx",
            "4f1e2d3c4b5a69788796a5b4c3d2e1f0a9b8c7d6",
            AWS_SECRET,
        ],
    ),
    (
        "japanese_password_label",
        "初期パスワード：ｈｕｎｔｅｒ２ｘ、ユーザー名：taro",
        ["credential_assignment"],
        ["ｈｕｎｔｅｒ２ｘ"],
    ),
    (
        "encrypted_legacy_pem",
        f"鍵は次の通り。\n\n{ENCRYPTED_PEM}\n\n以上。",
        ["private_key", "private_key"],
        [DEK_IV, *KEY_LINES],
    ),
    (
        "pem_excerpt_then_text",
        f"{PEM_EXCERPT}\n(the rest of the key was cut from the ticket)",
        ["private_key"],
        list(EXCERPT_LINES),
    ),
    ("pem_excerpt_at_the_end", f"key:\n{PEM_EXCERPT}\n", ["private_key"], list(EXCERPT_LINES)),
    (
        "us_phones",
        "Call (415) 555-2671, 415-555-2671, 415.555.2671, +1 415 555 2671 or 1-800-555-0199.",
        ["phone"] * 5,
        ["(415) 555-2671", "415-555-2671", "415.555.2671", "+1 415 555 2671", "1-800-555-0199"],
    ),
    (
        "japanese_phones_with_spaces",
        "携帯 090 1234 5678、代表 03 1234 5678、フリーダイヤル 0120 123 456",
        ["phone"] * 3,
        ["090 1234 5678", "03 1234 5678", "0120 123 456"],
    ),
]


def views(text: str) -> list[str]:
    """A text as written, NFKC-normalised, and in the matching form the rules read."""
    return [text, unicodedata.normalize("NFKC", text), matching_form(text).text]


def assert_masked(text: str, secrets: list[str]) -> tuple[str, list[Redaction]]:
    """Every secret is gone in every view of the redacted text; the paragraphs are the same."""
    redacted, redactions = redact(text, DOC, ALL)
    for secret in secrets:
        for shown in views(redacted):
            for form in views(secret):
                assert form not in shown, (secret, redacted)
    before, after = split_paragraphs(text), split_paragraphs(redacted)
    assert [p.index for p in after] == [p.index for p in before]
    return redacted, redactions


@pytest.mark.parametrize(
    ("text", "rules", "secrets"), [s[1:] for s in SHAPES], ids=[s[0] for s in SHAPES]
)
def test_every_shape_is_masked_in_every_view(
    text: str, rules: list[str], secrets: list[str]
) -> None:
    _, redactions = assert_masked(text, secrets)
    assert [found.rule for found in redactions] == rules


@pytest.mark.parametrize(
    "text",
    [
        "released 2024-01-15, patched ２０２４－０１－１５ and 2024.01.15",
        "at 2024-01-15T10:15:30Z, 12:34:56 and １２：３４",
        "version 1.2.3, 10.0.12 and v2.31.4",
        "in 2024, 1999 and ２０２５年",
        "〒100-0001 東京都千代田区、〒060-0001 札幌市、〒１００－０００１",
        "¥1,234,567, $1,299.00, ￥９８０ and 3.14159",
        "dd-mm-yyyy 05-12-2024 and 0 12 345",
        "ISBN 978-4-10-109205-8 and 0-306-40615-2",
        "IPs 192.168.100.200 and 10.0.0.1",
        '{"max_tokens": 4096, "token_type": "bearer", "password_min_length": 8}',
        "ゼロ幅\u200bスペース\u00adと　全角スペース",
    ],
)
def test_what_only_looks_like_a_number_is_left_alone(text: str) -> None:
    assert redact(text, DOC, ALL) == (text, [])


def test_a_full_width_match_masks_exactly_its_original_characters() -> None:
    phone = "０３－１２３４－５６７８"
    text = f"電話：{phone}（代表）"
    redacted, redactions = redact(text, DOC, ALL)
    assert redacted == f"電話：«redacted phone {digest(phone)[:4]}»（代表）"
    assert redactions == [
        Redaction("phone", 0, f"«redacted phone {digest(phone)[:4]}»", len(phone.encode()))
    ]


def test_an_invisible_character_inside_a_match_is_masked_with_it() -> None:
    assert masked("mail taro\u200b@example.com\u200b now") == [("email", "taro\u200b@example.com")]


def test_check_digits_are_verified_on_the_matching_form() -> None:
    assert masked("番号：１２３４ ５６７８ ９０１８") == [
        ("my_number", "１２３４ ５６７８ ９０１８")
    ]
    assert rules_of("番号：１２３４ ５６７８ ９０１７") == []
    assert rules_of("カード ５５５５－５５５５－５５５５－４４４４") == ["payment_card"]
    assert rules_of("カード ５５５５－５５５５－５５５５－４４４５") == []


def test_a_script_change_is_a_word_boundary() -> None:
    assert rules_of("電話03-1234-5678まで") == ["phone"]
    assert rules_of(f"キーは{AWS}です") == ["aws_access_key"]
    assert rules_of("マイナンバー123456789018を提出") == ["my_number"]


def test_user_rules_read_the_matching_form() -> None:
    rules, _ = parse_rules_file("emp_id\t\\bEMP-\\d{6}\\b\n", path="r")
    assert masked("社員番号 ＥＭＰ－１２３４５６ です", ALL + rules) == [
        ("emp_id", "ＥＭＰ－１２３４５６")
    ]


def test_a_placeholder_is_kept_only_as_written() -> None:
    look_alikes = [
        "«redacted email ３ｆ９ａ»",
        "«redacted\u00a0email 3f9a»",
        "«redacted email 3f\u200b9a»",
    ]
    for text in look_alikes:
        assert redact(text, DOC, ALL) == (text, [])
    _, redactions = redact("x «redacted email 3f9a» y", DOC, ALL)
    assert [found.preexisting for found in redactions] == [True]


def test_the_answer_scan_reads_the_matching_form_too() -> None:
    assert scan_answer_text("連絡先ｔａｒｏ＠ｅｘａｍｐｌｅ．ｃｏｍ", ALL) == ["email"]
    assert scan_answer_text("taro\u200b@example.com", ALL) == ["email"]
    assert scan_answer_text("電話０９０－１２３４－５６７８", ALL) == ["phone"]
    assert scan_answer_text("4111\u00a01111\u00a01111\u00a01111", ALL) == ["payment_card"]


def test_credential_names_take_quotes_camel_case_and_their_cloud_spellings() -> None:
    names = [
        "password",
        "db.passwd",
        "passphrase",
        "SecretAccessKey",
        "secret_access_key",
        "AWS_SECRET_ACCESS_KEY",
        "clientSecret",
        "client_secret",
        "access_token",
        "refreshToken",
        "apiKey",
        "private_key",
        "private_key_id",
        "PRIVATE_KEY",
        "signing_key",
        "encryption_key",
    ]
    for name in names:
        for line in [f'"{name}": "v4lue-{name}"', f"'{name}': 'v4lue-{name}'", f"{name}=v4lue"]:
            assert rules_of(line) == ["credential_assignment"], line
    assert masked('"password": "a \\"b\\" c"') == [("credential_assignment", 'a \\"b\\" c')]
    assert masked("password = 'it is; still one'") == [
        ("credential_assignment", "it is; still one")
    ]
    assert masked('password = "unterminated and more') == [
        ("credential_assignment", "unterminated")
    ]


def test_a_quoted_authorization_header_masks_the_credential_only() -> None:
    redacted, _ = redact('{"Authorization": "Bearer abc.def.ghi"}', DOC, ALL)
    assert redacted.startswith('{"Authorization": "Bearer «redacted authorization_header ')
    assert redacted.endswith('»"}')


def test_a_pem_block_split_by_a_blank_line_is_masked_in_each_paragraph() -> None:
    text = f"intro\n\n{ENCRYPTED_PEM}\n\nafter"
    redacted, redactions = assert_masked(text, [DEK_IV, *KEY_LINES, "ENCRYPTED"])
    after = split_paragraphs(redacted)
    assert [(found.rule, found.paragraph) for found in redactions] == [
        ("private_key", 1),
        ("private_key", 2),
    ]
    assert [p.text for p in after] == [
        "intro",
        redactions[0].placeholder,
        redactions[1].placeholder,
        "after",
    ]
    assert redactions[0].placeholder != redactions[1].placeholder


def test_a_pem_block_with_crlf_line_ends_is_masked_the_same_way() -> None:
    text = f"intro\n\n{ENCRYPTED_PEM}\n\nafter".replace("\n", "\r\n")
    _, redactions = assert_masked(text, [DEK_IV, *KEY_LINES])
    assert [(found.rule, found.paragraph) for found in redactions] == [
        ("private_key", 1),
        ("private_key", 2),
    ]


def test_a_pem_armor_of_any_private_key_kind_is_masked() -> None:
    pgp = (
        "-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: GnuPG v2\n\n"
        "lQOYBF0Q8ZkBCADJxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdef\n=Ab1c\n"
        "-----END PGP PRIVATE KEY BLOCK-----"
    )
    assert_masked(pgp, ["lQOYBF0Q8ZkBCADJxyz", "=Ab1c"])
    openssh = (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n"
        "-----END OPENSSH PRIVATE KEY-----"
    )
    assert masked(openssh) == [("private_key", openssh)]


def test_a_pem_excerpt_is_masked_through_its_last_base64_line_only() -> None:
    text = f"{PEM_EXCERPT}\nThe rest was cut.\n\nRegards\nTaro"
    redacted, redactions = assert_masked(text, list(EXCERPT_LINES))
    assert redacted == f"{redactions[0].placeholder}\nThe rest was cut.\n\nRegards\nTaro"
    # Short words after a blank line are not key material.
    text = f"{PEM_EXCERPT}\n\nRegards\nTaro"
    assert redact(text, DOC, ALL)[0].endswith("»\n\nRegards\nTaro")


def test_a_pem_block_inside_a_credential_value_is_masked_whole() -> None:
    escaped = (
        '"private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC'
        '\\n-----END PRIVATE KEY-----\\n"'
    )
    assert_masked(escaped, ["MIIEvQIBADANBgkqhkiG9w0BAQEFAASC"])
    truncated = '"private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC'
    assert_masked(truncated, ["MIIEvQIBADANBgkqhkiG9w0BAQEFAASC"])
    yaml = (
        'private_key: "-----BEGIN RSA PRIVATE KEY-----\n'
        f'  {KEY_LINES[0]}\n  -----END RSA PRIVATE KEY-----"'
    )
    _, redactions = assert_masked(yaml, [KEY_LINES[0]])
    assert [found.rule for found in redactions] == ["private_key"]


def test_unclosed_key_blocks_and_long_base64_runs_are_scanned_in_linear_time() -> None:
    text = "-----BEGIN PRIVATE KEY-----\n\n" * 20_000 + "end\n\n" + ("QUFB" * 16 + "\n") * 20_000
    # CPU time, not wall time: a busy machine stretches the latter. Linear is about half
    # a second here; a quadratic scan of these 20 000 blocks would take hours.
    started = time.process_time()
    assert len(redact(text, DOC, ALL)[1]) == 20_000
    assert time.process_time() - started < 30


@pytest.mark.parametrize(
    "phone",
    [
        "(415) 555-2671",
        "(415)555-2671",
        "415-555-2671",
        "415.555.2671",
        "+1 415 555 2671",
        "+1 (415) 555-2671",
        "1-800-555-0199",
        "090 1234 5678",
        "03 1234 5678",
        "0120 123 456",
        "(03) 1234 5678",
        "090ー1234ー5678",
        "03−1234−5678",
    ],
)
def test_us_and_spaced_japanese_phone_forms(phone: str) -> None:
    assert masked(f"tel {phone} now") == [("phone", phone)]


def test_a_phone_has_as_many_digits_as_a_phone_number() -> None:
    assert phone_digits_plausible("03-1234-5678")
    assert phone_digits_plausible("090-1234-5678")
    assert phone_digits_plausible("+81 3 1234 5678")
    assert not phone_digits_plausible("05-12-2024")
    assert not phone_digits_plausible("0123-4567-8901")
    assert not phone_digits_plausible("+1 23 456")


# --- the shapes corpus a later end-to-end test reuses ------------------------------------------

SHAPES_CORPUS = Path(__file__).resolve().parent / "fixtures" / "redaction"


def test_the_shapes_corpus_loses_every_secret_and_keeps_every_look_alike() -> None:
    text = (SHAPES_CORPUS / "shapes.md").read_text(encoding="utf-8")
    expected = json.loads((SHAPES_CORPUS / "shapes.json").read_text(encoding="utf-8"))
    redacted, redactions = assert_masked(text, [entry["secret"] for entry in expected["secrets"]])
    for kept in expected["kept"]:
        assert kept in redacted, kept
    assert {entry["rule"] for entry in expected["secrets"]} <= {found.rule for found in redactions}
    assert len(split_paragraphs(redacted)) == len(split_paragraphs(text)) == expected["paragraphs"]


# --- issue 37: what a space character, a phone's everyday shape or a short label hid ----------


@pytest.mark.parametrize(
    ("text", "secrets"),
    [
        ("mail taro\u00a0yamada@example.com now", ["taro", "yamada", "example.com"]),
        ("mail taro@exam\u202fple.com now", ["taro", "exam", "ple.com"]),
        (f"key {AWS[:9]}\u00a0{AWS[9:]} here", [AWS[:9], AWS[9:]]),
        (f"key {AWS[:9]}\u3000{AWS[9:]} here", [AWS[:9], AWS[9:]]),
        ("password=hunter\u2007two-x9 done", ["hunter", "two-x9"]),
        (f"key {AWS[:9]}\u1680{AWS[9:]} here", [AWS[:9], AWS[9:]]),
        (f"key {AWS[:9]}\u0600{AWS[9:]} here", [AWS[:9], AWS[9:]]),
    ],
)
def test_a_space_or_format_character_inside_a_match_hides_nothing(
    text: str, secrets: list[str]
) -> None:
    redacted, _ = redact(text, DOC, ALL)
    for secret in secrets:
        assert secret not in redacted, (secret, redacted)


@pytest.mark.parametrize(
    "phone", ["(555) 123-4567", "555-123-4567", "555 123 4567", "555.123.4567", "(555)123 4567"]
)
def test_a_us_phone_in_its_everyday_shapes_is_masked(phone: str) -> None:
    assert masked(f"call {phone} today") == [("phone", phone)]


def test_pass_is_a_credential_label_but_not_inside_a_longer_word() -> None:
    assert masked('{"pass": "hunter2-x"}') == [("credential_assignment", "hunter2-x")]
    assert masked("DB_PASS=hunter2-x") == [("credential_assignment", "hunter2-x")]
    for text in ["bypass: true", "compass = north", "passes: 3", "the passage: read it"]:
        assert redact(text, DOC, ALL) == (text, []), text


@pytest.mark.parametrize("ssn", ["123-45-6789", "123 45 6789", "078-05-1120"])
def test_a_us_social_security_number_is_pii(ssn: str) -> None:
    assert masked(f"SSN {ssn} on file") == [("us_ssn", ssn)]
    assert [rule.name for rule in builtin_rules(frozenset({PII}))].count("us_ssn") == 1


@pytest.mark.parametrize("ssn", ["000-12-3456", "666-12-3456", "912-12-3456", "123-00-4567"])
def test_a_number_the_ssa_never_issues_is_no_ssn(ssn: str) -> None:
    assert rules_of(f"ref {ssn}") == []


def test_an_escaped_quote_around_a_credential_is_json_not_the_value() -> None:
    assert masked('password=\\"hunter2-x\\"') == [("credential_assignment", "hunter2-x")]
    assert masked('{\\"api_key\\": \\"abc-123-def\\"}') == [
        ("credential_assignment", "abc-123-def")
    ]
    assert masked('API_KEY=\\\\\\"hunter2-x\\\\\\"') == [("credential_assignment", "hunter2-x")]
