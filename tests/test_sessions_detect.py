"""Format detection reads any JSON a file holds: a ``type`` or ``role`` that is a list, an
object or a number is no format's, never a TypeError (found by tests/test_fuzz_sessions.py)."""

from __future__ import annotations

import json

import pytest

from taguru_ray.sessions.convert import SessionRefused, convert, detect


@pytest.mark.parametrize("kind", [["message"], {"a": 1}, 3, None, True])
def test_a_record_type_that_is_not_text_is_no_format(kind: object) -> None:
    lines = [{"type": kind, "payload": {}}, {"type": kind, "sessionId": "s", "uuid": "u"}]
    data = "\n".join(json.dumps(line) for line in lines).encode()
    assert detect(data) is None
    with pytest.raises(SessionRefused, match=r"^f\.jsonl: not a session this reads"):
        convert(data, file="f.jsonl")
