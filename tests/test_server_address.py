"""A server address that cannot be a URL — words, a space in the host, a control character —
is a usage error (exit 2) of one line in every verb that talks to a Taguru server
(`evaluate`, `benchmark search`, `import --url`), never http.client's InvalidURL (issue 37)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from taguru_ray.cli import main
from taguru_ray.remote.address import AddressError, base_url
from tests.test_benchmark_search_cli import eval_of, results_dir

FIXTURES = Path(__file__).parent / "fixtures"
SOURCE = str(next((FIXTURES / "records" / "run-a").glob("*.jsonl")))
EVAL = str(FIXTURES / "evaluate" / "eval.jsonl")
UNPARSABLE = ["not a url", "http://bad host:8248", "http://host\t:8248", "127.0.0.1:8248\x1b[2J"]


@pytest.fixture(autouse=True)
def _no_taguru_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [name for name in os.environ if name.startswith("TAGURU_")]:
        monkeypatch.delenv(name)


@pytest.mark.parametrize("url", UNPARSABLE)
def test_an_address_with_a_space_or_a_control_character_is_refused(url: str) -> None:
    with pytest.raises(AddressError, match=r"^--url .*a space or a control character"):
        base_url(url, {})
    with pytest.raises(AddressError, match=r"^TAGURU_ADDR .*a space or a control character"):
        base_url(None, {"TAGURU_ADDR": url})


def test_a_good_address_still_reads_as_before() -> None:
    assert base_url(" http://127.0.0.1:8248/ ", {}) == "http://127.0.0.1:8248"
    assert base_url(None, {"TAGURU_ADDR": "0.0.0.0:9"}) == "http://127.0.0.1:9"


@pytest.mark.parametrize("url", UNPARSABLE)
@pytest.mark.parametrize("verb", ["evaluate", "benchmark search", "import"])
def test_every_verb_says_an_unparsable_url_in_one_line_and_exits_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, verb: str, url: str
) -> None:
    argv = {
        "evaluate": ["evaluate", "--eval", EVAL, "--context", "c", "--url", url],
        "import": ["import", SOURCE, "--url", url],
    }.get(verb)
    if argv is None:
        results = results_dir(tmp_path / "results")
        argv = ["benchmark", "search", "--eval", eval_of(results), "--url", url, str(results)]
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    [line] = [line for line in err.splitlines() if "--url" in line]  # beside eval warnings
    assert "--url holds a space or a control character" in line
    assert "\x1b" not in err and "Traceback" not in err and "this is a bug" not in err
