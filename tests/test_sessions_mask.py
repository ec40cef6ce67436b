"""`sessions import --mask` at every quoting level the converters meet (issue 37, item 4).

A session line is JSON; a turn's text is a JSON string in it; a Codex call's
``arguments`` and a tool's output are JSON inside that string, whose strings are
escaped twice; a shell command quoted in one of those, three times. The secret
is drawn, its quoting (bare, "double", 'single', a JSON key's value, a quote a
user rule spells) and the level it is written at; after `mask` no run of four
of its characters is left at any level the line decodes to, every level that
was JSON still is, and a line `mask` could not clean is refused, never passed.
"""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from taguru_ray.sessions.convert.jsontext import string_tokens
from taguru_ray.sessions.convert.layers import SpanMap, layers
from taguru_ray.sessions.convert.refusal import Refused
from taguru_ray.sessions.convert.secrets import line_secret, mask, secret_rules
from taguru_ray.text.redact import parse_rules_file

pytestmark = pytest.mark.fuzz

HOLE = "\ue000"
USER_RULES, _ = parse_rules_file('ticket_note\tnote="TKT[^"]+"\n', path="rules.tsv")
RULES = secret_rules(USER_RULES)
AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
PLACEHOLDER = re.compile(r"«redacted [a-z0-9_]+ [0-9a-f]{4,64}»")

# How the secret sits in the innermost text: (the text, the secret's own prefix kept).
QUOTINGS = {
    "bare": f"export API_KEY={HOLE}",
    "double": f'export API_KEY="{HOLE}" && run',
    "single": f"export DB_PASSWORD='{HOLE}'; run",
    "json_key": json.dumps({"password": HOLE}, ensure_ascii=False),
    "user_rule": f'note="TKT{HOLE}" filed',
    "key_in_text": f"the key {HOLE} leaked",
}


def wrap(text: str, levels: int) -> str:
    """``text`` as the innermost string of a line ``levels`` JSON strings deep."""
    for _ in range(levels - 1):
        text = json.dumps({"command": ["bash", "-lc", text]}, ensure_ascii=False)
    line = {"type": "function_call", "arguments": text, "call_id": "c1"}
    return json.dumps(line, ensure_ascii=False)


def readings(line: str) -> list[str]:
    """The line and every JSON string in it, decoded, recursively."""
    found, queue = [], [line]
    while queue:
        text = queue.pop()
        found.append(text)
        try:
            value = json.loads(text)
        except ValueError:
            continue
        queue += list(_strings(value))
    return found


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for item in value.values() for s in _strings(item)]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []


def runs(text: str) -> set[str]:
    return {text[i : i + 4] for i in range(len(text) - 3)}


VALUES = st.text(
    alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.", min_size=8
).filter(lambda value: value[-1].isalnum())


@given(VALUES, st.sampled_from(sorted(QUOTINGS)), st.integers(1, 3))
@example("hunter2value", "double", 2)
@example("-4f2e-KEEP-out", "user_rule", 2)
@example(AWS_KEY, "key_in_text", 3)
def test_no_level_of_a_masked_line_shows_the_secret(value: str, quoting: str, levels: int) -> None:
    secret = AWS_KEY if quoting == "key_in_text" else value
    template = wrap(QUOTINGS[quoting], levels)
    line = template.replace(HOLE, secret)
    try:
        [after], hits = mask([line], RULES, "0" * 64)
    except Refused:
        return  # refused whole: nothing of it is stored
    around = set().union(*(runs(text) for text in readings(template)))
    for text in readings(after):
        shown = runs(PLACEHOLDER.sub(HOLE, text))
        assert not (runs(secret) & shown) - around, (line, after)
    assert len(readings(after)) == len(readings(line))
    assert hits and line_secret(after, RULES) is None


@pytest.mark.parametrize("levels", [1, 2, 3])
def test_a_secret_an_escape_spells_is_read_decoded_at_every_level(levels: int) -> None:
    # The key's first letter written \u0041 in the innermost JSON: only decoding shows it.
    line = wrap('{"k": "\\u0041' + AWS_KEY[1:] + '"}', levels)
    assert line_secret(line, RULES) == "aws_access_key"
    [after], hits = mask([line], RULES, "0" * 64)
    assert [str(hit) for hit in hits] == ["line 1: aws_access_key"]
    for text in readings(after):
        assert AWS_KEY[1:] not in text, after
    assert len(readings(after)) == len(readings(line))


@given(st.text(), st.booleans())
def test_a_decoded_string_maps_each_character_to_its_own_escape(text: str, ascii: bool) -> None:
    line = json.dumps(text, ensure_ascii=ascii)
    [token] = string_tokens(line)
    decoded = SpanMap.of(line, token)
    assert decoded is not None
    value, spans = decoded
    assert value == text
    pairs = [spans.span(i, i + 1) for i in range(len(value))]
    starts, ends = [a for a, _ in pairs], [b for _, b in pairs]
    assert starts == [1, *ends[:-1]][: len(starts)] and ends[-1:] in ([], [len(line) - 1])
    for char, start, end in zip(value, starts, ends, strict=True):
        assert json.loads(f'"{line[start:end]}"') == char


INNER = st.text(alphabet='ab"\\\n\u00e9\U0001f600', min_size=1).filter(lambda t: '"' in t)


@given(INNER, st.integers(2, 4), st.data())
def test_a_span_at_any_level_maps_back_to_whole_escapes_of_the_line(
    text: str, levels: int, data: st.DataObject
) -> None:
    line = wrap(text, levels)
    [inner] = [layer for layer in layers(line) if layer.depth == levels]
    assert inner.text == text
    start = data.draw(st.integers(0, len(text) - 1))
    end = data.draw(st.integers(start + 1, len(text)))
    first, last = inner.raw_span(start, end)
    replaced = line[:first] + "«X»" + line[last:]
    assert unwrap(replaced, levels) == text[:start] + "«X»" + text[end:]


def unwrap(line: str, levels: int) -> str:
    text: str = json.loads(line)["arguments"]
    for _ in range(levels - 1):
        text = json.loads(text)["command"][2]
    return text


WORDS = st.sampled_from(["the", "Deploy", "Script", "ran", "ok", "\n", "x", "AKIA", "a-b"])
PLANTED = st.sampled_from([AWS_KEY, "ghp_" + "Ab1" * 13, "password=hunter2x", "api_key: 'k9k9k9'",
                           "https://u:pw9pw9@host/x"])  # fmt: skip


@given(st.lists(st.one_of(WORDS, PLANTED), max_size=60), st.integers(8, 40))
def test_a_long_reading_is_read_in_windows_with_the_same_matches(
    parts: list[str], window: int
) -> None:
    """Issue 49 item 12: a reading longer than a window is scanned a window at a time
    (bounded memory per line); every secret no longer than the overlap is found and
    placed exactly as one read of the whole finds and places it."""
    from taguru_ray.sessions.convert import secrets as module
    from taguru_ray.sessions.convert.layers import Layer

    text = " ".join(parts)
    whole = module._layer_spans(Layer(text), RULES, "0" * 64)
    saved = (module.WINDOW, module.OVERLAP, module.LEAD)
    module.WINDOW, module.OVERLAP, module.LEAD = window, 48, 24
    try:
        windowed = module._layer_spans(Layer(text), RULES, "0" * 64)
        tripped = module._tripped(text, RULES)
    finally:
        module.WINDOW, module.OVERLAP, module.LEAD = saved
    assert whole is not None and windowed is not None
    assert [(s.start, s.end, s.rule) for s in windowed] == [(s.start, s.end, s.rule) for s in whole]
    assert set(tripped) >= {s.rule for s in whole}
