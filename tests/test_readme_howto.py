"""The README's newcomer path works as written (issue 22, point 7): its first commands are
`make demo` and `make test`, and the Ollama and vLLM how-to's variables are read by extract
exactly as the README shows them.

No model can run here: the servers' own command lines are the ones their documentation
gives; what taguru-ray controls — every variable the how-to exports, and whether its window
holds a chunk's prompt and the escalated answer — is what these tests hold to.
"""

from __future__ import annotations

import json
import math
import re
import shlex
import shutil
from pathlib import Path

import pytest

from taguru_ray.contract.settings.sizes import DEFAULT_CHUNK_BYTES
from taguru_ray.pipeline.prompt import system_prompt
from taguru_ray.pipeline.steer import Steering
from taguru_ray.settings.resolve import known_variables
from tests.support import CONTEXT, REPO, Cli

README = REPO / "README.md"
HOWTOS = ("ollama", "vllm")
# The carryover block's 32 names ride in the system prompt beside the rules: room for them.
CARRYOVER_BYTES = 1024
# Japanese costs about a token per character, three bytes of UTF-8: the dearer of the two
# scripts the README budgets for (English is about four bytes a token).
BYTES_PER_TOKEN = 3
DEFAULT_ESCALATION_FACTOR = 2


def readme() -> str:
    return README.read_text(encoding="utf-8")


def fenced_blocks(text: str) -> list[str]:
    return re.findall(r"^```sh\n(.*?)^```$", text, flags=re.S | re.M)


def lines(block: str) -> list[list[str]]:
    """The block's command lines as words (continuations joined, comments dropped)."""
    joined = block.replace("\\\n", " ").splitlines()
    return [words for words in (shlex.split(line, comments=True) for line in joined) if words]


def commands(block: str) -> list[str]:
    return [" ".join(words) for words in lines(block)]


def howto(name: str) -> str:
    """The sh block the README marks ``<!-- howto: NAME … -->``."""
    text = readme()
    marker = text.index(f"<!-- howto: {name}")
    return fenced_blocks(text[marker:])[0]


def exports(block: str) -> dict[str, str]:
    found = {}
    for words in lines(block):
        if words[0] == "export":
            key, _, value = words[1].partition("=")
            found[key] = value
    return found


def corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    shutil.copytree(REPO / "examples" / "corpus", folder)
    return folder


def test_the_readme_opens_with_make_demo_and_make_test() -> None:
    first = fenced_blocks(readme())[0]
    assert commands(first) == ["make demo", "make test"]
    targets = re.findall(r"^([a-z-]+):", (REPO / "Makefile").read_text(), flags=re.M)
    assert {"demo", "test", "venv"} <= set(targets)


def test_the_install_section_names_what_the_makefile_and_pyproject_provide() -> None:
    text = readme()
    install = text[text.index("## Installing") : text.index("## Running it against a real model")]
    blocks = [commands(block) for block in fenced_blocks(install)]
    assert blocks[0][:2] == ["make venv", "export PATH=$PWD/.venv/bin:$PATH"]
    assert "pip install -e ." in blocks[1]
    makefile = (REPO / "Makefile").read_text()
    assert "VENV ?= .venv" in makefile and "pip install --quiet -e '.[test]'" in makefile


@pytest.mark.parametrize("name", HOWTOS)
def test_every_variable_the_howto_exports_is_one_taguru_ray_reads(name: str) -> None:
    exported = exports(howto(name))
    assert {"TAGURU_EXTRACT_URL", "TAGURU_EXTRACT_MODEL"} <= set(exported)
    assert set(exported) <= known_variables(), set(exported) - known_variables()


@pytest.mark.parametrize(
    ("name", "window_pattern"),
    [("ollama", r"PARAMETER num_ctx (\d+)"), ("vllm", r"--max-model-len (\d+)")],
)
def test_the_howto_window_holds_a_chunk_prompt_and_the_escalated_answer(
    name: str, window_pattern: str
) -> None:
    block = howto(name)
    window = int(re.search(window_pattern, block)[1])  # type: ignore[index]
    exported = exports(block)
    chunk = int(exported.get("TAGURU_EXTRACT_CHUNK_BYTES", DEFAULT_CHUNK_BYTES))
    budget = int(exported["TAGURU_EXTRACT_MAX_OUTPUT_TOKENS"])
    factor = float(exported.get("TAGURU_EXTRACT_ESCALATION_FACTOR", DEFAULT_ESCALATION_FACTOR))
    instructions = len(system_prompt(Steering()).encode("utf-8")) + CARRYOVER_BYTES
    prompt = math.ceil((instructions + chunk) / BYTES_PER_TOKEN)
    assert prompt + factor * budget <= window, (prompt, budget, window)


def test_the_howto_turns_thinking_off_the_ways_the_servers_document() -> None:
    vllm = " ".join(commands(howto("vllm")))
    assert '--default-chat-template-kwargs {"enable_thinking": false}' in vllm
    ollama = howto("ollama")
    model = exports(ollama)["TAGURU_EXTRACT_MODEL"]
    assert f"ollama create {model} -f Modelfile" in commands(ollama)


@pytest.mark.slow
@pytest.mark.parametrize("name", HOWTOS)
def test_the_howto_environment_plans_a_dry_run(name: str, cli: Cli, tmp_path: Path) -> None:
    """Exactly the README's variables, its endpoint included: extract accepts them all."""
    env = cli.env()
    env.update(exports(howto(name)))
    docs, out = corpus(tmp_path), tmp_path / "sources"
    result = cli.extract("--context", CONTEXT, "--out", str(out), "--dry-run", str(docs), env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == (
        "extract: 3 planned, 0 unchanged, 0 failed of 3 segment(s)"
    )
    assert "not a variable taguru-ray reads" not in result.stderr
    assert not out.exists()


@pytest.mark.slow
@pytest.mark.parametrize("name", HOWTOS)
def test_the_howto_settings_extract_through_the_simulator(
    name: str, cli: Cli, tmp_path: Path
) -> None:
    """The README's variables with the simulator standing in for the server: the run
    finishes, and its settings record holds what the how-to set."""
    exported = exports(howto(name))
    env = cli.env(**{k: v for k, v in exported.items() if k != "TAGURU_EXTRACT_URL"})
    docs, out = corpus(tmp_path), tmp_path / "sources"
    result = cli.extract("--context", CONTEXT, "--out", str(out), str(docs), env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == (
        "extract: 3 written, 0 unchanged, 0 failed of 3 segment(s)"
    )
    logs = sorted((out / ".extract-trace").glob("*.attempts.jsonl"))
    assert len(logs) == 3
    for log in logs:
        records = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
        [settings] = [r for r in records if r["type"] == "settings"]
        assert settings["model"] == exported["TAGURU_EXTRACT_MODEL"]
        assert settings["max_output_tokens"] == int(exported["TAGURU_EXTRACT_MAX_OUTPUT_TOKENS"])
        assert settings["structured_output"] == exported["TAGURU_EXTRACT_STRUCTURED_OUTPUT"]
