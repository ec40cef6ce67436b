"""The one masker of what is shown (`text/masking.py`), with literals."""

from __future__ import annotations

import pytest

from taguru_ray.text.masking import masked, secrets_in, url_origin, url_without_credentials


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("https://user:pw@api.example.com/v1?api-key=k", "https://api.example.com"),
        ("http://10.0.0.2:8000/v1", "http://10.0.0.2:8000"),
        ("http://[::1]:80/x", "http://[::1]"),
        ("not a url", "<unparseable-url>"),
    ],
)
def test_the_origin_is_scheme_host_and_port_only(url: str, origin: str) -> None:
    assert url_origin(url) == origin


@pytest.mark.parametrize(
    ("url", "kept", "removed"),
    [
        ("https://u:p@h/v1", "https://h/v1", ("user:password@",)),
        ("https://h/v1?api-key=k&x=1", "https://h/v1?x=1", ("?api-key=",)),
        ("https://h/v1?X-Amz-Signature=s&X-Amz-Date=d", "https://h/v1?X-Amz-Date=d",
         ("?X-Amz-Signature=",)),
        ("https://h/v1?key=k&access_token=t", "https://h/v1", ("?key=", "?access_token=")),
        ("https://h/v1?page=2", "https://h/v1?page=2", ()),
        ("/a/local/path", "/a/local/path", ()),
        ("https://h/keys/sk-" + "a" * 24, None, ("a secret (openai_key)",)),
    ],
)  # fmt: skip
def test_a_url_kept_in_a_file_loses_its_credentials(
    url: str, kept: str | None, removed: tuple[str, ...]
) -> None:
    assert url_without_credentials(url) == (kept, removed)


def test_a_path_is_masked_with_a_placeholder_or_a_digest_free_mark() -> None:
    path = "/home/u/.claude/projects/-home-u-ghp_" + "Ab1" * 13 + "/s.jsonl"
    assert secrets_in(path) == ["github_token"]
    assert masked(path).endswith("-home-u-«redacted github_token»/s.jsonl")
    stored = masked(path, salt="0" * 64, key=b"k")
    assert "«redacted github_token " in stored and "Ab1Ab1" not in stored
    assert masked("/home/u/plain/s.jsonl") == "/home/u/plain/s.jsonl"
