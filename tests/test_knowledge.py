"""The knowledge itself, to look at (issue 50, item 4): `taguru_ray.associations` and
`taguru_ray.concepts` over a real run of the anchor corpus, the summary line of segments
that wrote nothing, and the report's segments rendered in headless Chromium.

One extract run serves every test here: the anchor corpus (six Japanese documents) with
one answer given a fabricated association (removed), plus an English segment whose every
item is fabricated — written with zero associations, exit 0.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

import taguru_ray
from taguru_ray.contract.items import Association
from taguru_ray.contract.source_file import parse_source_file, render_source_file
from taguru_ray.engine.scan import Console, Tally
from taguru_ray.engine.stopping import Stopping
from taguru_ray.engine.summary import Summary
from taguru_ray.errors import UsageError
from taguru_ray.pricing.tariff import Tariff
from taguru_ray.simulate.harness import SimulatorProcess
from taguru_ray.text.paragraphs import split_paragraphs
from taguru_ray.tools.knowledge import NoSourceFiles
from tests.anchor import ANCHOR
from tests.support import CONTEXT, REPO, Cli
from tests.test_report import CHROMIUM, chromium, needs_chromium, rendered

CORPUS = ANCHOR / "adr" / "0001" / "corpus"
NOTHING = "The lighthouse keeper rows out at dawn.\n\nNo one has seen the keeper's brother.\n"
FABRICATED = {
    "associations": [
        {"subject": "Atlantis", "label": "visits", "object": "El Dorado", "weight": 1.0,
         "paragraph": 0},
    ],
    "aliases": [{"alias": "Lost City", "canonical": "Atlantis", "kind": "concept"}],
    "questions": [],
}  # fmt: skip
ATLANTIS = 'subject "Atlantis" does not appear in the segment text'


@pytest.fixture(scope="module")
def run(
    ray_address: str, simulator_process: SimulatorProcess, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, subprocess.CompletedProcess[str]]:
    folder = tmp_path_factory.mktemp("knowledge")
    docs = folder / "docs"
    shutil.copytree(CORPUS, docs)
    (docs / "zz-nothing.md").write_text(NOTHING, encoding="utf-8")
    simulator_process.set_script(
        [
            {"match": "lighthouse keeper", "answer": FABRICATED},
            {"match": "協会9号", "fault": "fabricated"},  # table_noisy.md: one removal
        ]
    )
    simulator_process.reset()
    try:
        done = Cli(ray_address, simulator_process).extract(
            "--context", CONTEXT, "--questions", "2", "--out", str(folder / "out"), str(docs)
        )
    finally:
        simulator_process.set_script([])
    assert done.returncode == 0, done.stderr
    return folder / "out", done


def test_an_all_removed_segment_is_said_in_the_summary(
    run: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    out, done = run
    assert f"{out.parent / 'docs'}/zz-nothing.md: 0 association(s)" in done.stdout
    said = [line for line in done.stderr.splitlines() if "wrote 0 associations" in line]
    assert said == [
        f"taguru: extract: 1 segment(s) wrote 0 associations — see taguru-ray report {out} "
        "(what each answer held and why it was removed)"
    ]


def test_the_empty_segments_line_is_said_only_when_there_are_some() -> None:
    lines: list[str] = []
    console = Console(lines.append, lines.append)
    for empty in (0, 3):
        lines.clear()
        tally = Tally(written=5, total=5, empty=empty)
        stop = Stopping(console, lambda: None, None, None)  # type: ignore[arg-type]
        summary = Summary(console, tally, ["a"] * 5, Tariff(), stop, "out dir")
        assert summary.close({}) == 0
        said = [line for line in lines if "wrote 0 associations" in line]
        assert said == (
            [] if not empty else [
                "taguru: extract: 3 segment(s) wrote 0 associations — see taguru-ray report "
                "'out dir' (what each answer held and why it was removed)"
            ]
        )  # fmt: skip


def test_associations_round_trip_the_anchor_corpus_source_files(
    run: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    """Every source file, rebuilt from the table's rows and the rest of the file, renders
    back to its own bytes; each row's paragraph text is the passage's paragraph."""
    out, _ = run
    table = taguru_ray.associations(str(out), texts=True)
    assert table.column_names == [
        "source", "file", "paragraph", "subject", "label", "object", "weight", "paragraph_text"
    ]  # fmt: skip
    rows = table.to_pylist()
    files = sorted(out.glob("*.jsonl"))
    assert len(files) == 7
    assert sorted({row["file"] for row in rows}) == [
        path.name for path in files if "zz-nothing.md-" not in path.name
    ]
    for path in files:
        data = path.read_bytes()
        parsed = parse_source_file(data, name=path.name)
        mine = [row for row in rows if row["file"] == path.name]
        assert {row["source"] for row in mine} <= {parsed.header.id}
        rebuilt = [
            Association(r["subject"], r["label"], r["object"], r["weight"], r["paragraph"])
            for r in mine
        ]
        assert render_source_file(replace(parsed, associations=rebuilt), name=path.name) == data
        assert parsed.passage is not None
        paragraphs = [p.text for p in split_paragraphs(parsed.passage.text)]
        for row in mine:
            assert row["paragraph_text"] == paragraphs[row["paragraph"]]
    assert len(rows) == sum(
        len(parse_source_file(p.read_bytes()).associations) for p in files
    ) > 50  # fmt: skip
    assert not [row for row in rows if row["source"].endswith("/zz-nothing.md")]
    without = taguru_ray.associations(str(out))
    assert "paragraph_text" not in without.column_names and without.num_rows == len(rows)


def test_concepts_count_what_the_associations_hold(
    run: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    out, _ = run
    facts = taguru_ray.associations(str(out)).to_pandas()
    concepts = taguru_ray.concepts(str(out)).to_pandas()
    uses = facts["subject"].value_counts().add(facts["object"].value_counts(), fill_value=0)
    counted = dict(zip(concepts["concept"], concepts["uses"], strict=True))
    assert counted == uses.astype(int).to_dict()
    assert list(concepts["uses"]) == sorted(concepts["uses"], reverse=True)
    top = concepts.iloc[0]
    used_in = facts[(facts["subject"] == top.concept) | (facts["object"] == top.concept)]
    assert top.segments == used_in["source"].nunique()
    assert (concepts["uses"] == concepts["as_subject"] + concepts["as_object"]).all()


def test_the_docs_queries_run_as_written(
    run: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    """docs/knowledge.md's pandas and DuckDB blocks (the README's query is the first), over
    this run's --out; the DuckDB one only where duckdb is installed (not a dependency)."""
    out, _ = run
    text = (REPO / "docs" / "knowledge.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)
    assert len(blocks) == 2 and all('"out/"' in block for block in blocks)
    for block in blocks:
        if "import duckdb" in block and importlib.util.find_spec("duckdb") is None:
            continue
        exec(block.replace('"out/"', repr(str(out))), {})


def test_a_missing_or_empty_out_is_said(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such folder"):
        taguru_ray.associations(str(tmp_path / "nowhere"))
    with pytest.raises(NoSourceFiles, match="no source file"):
        taguru_ray.concepts(str(tmp_path))
    (tmp_path / "bad.jsonl").write_text('{"subject":"a"}\n', encoding="utf-8")
    with pytest.raises(UsageError, match=r"bad.jsonl: line 1: .*taguru-ray verify"):
        taguru_ray.associations(str(tmp_path))


@needs_chromium
def test_the_segments_render_with_their_names_and_what_was_removed(
    run: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    out, _ = run
    html = tmp_path / "report.html"
    from taguru_ray.cli.report import main

    assert main([str(out), "--html", str(html)]) == 0
    dom = rendered(html)
    docs = out.parent / "docs"
    segment = _details(dom, f"{docs}/aliases.md")
    assert "<mark>高瀬正一</mark>" in segment and "<td>高瀬正一</td>" in segment
    nothing = _details(dom, f"{docs}/zz-nothing.md")
    assert 'class="seg lost zero"' in nothing and "0 association(s)" in nothing
    assert ATLANTIS in nothing
    assert "Atlantis | visits | El Dorado" in nothing
    assert "names nothing the associations contain" in nothing  # the alias, no paragraph
    noisy = _details(dom, f"{docs}/table_noisy.md")
    assert "<b>removed</b> association" in noisy and "does not appear in the segment text" in noisy
    # The filters are CSS alone: with "wrote no association" picked, the one such segment
    # is all that is drawn below them; with "all", the list runs on down the page.
    assert _ink_below_filters(tmp_path, html, None) > _ink_below_filters(tmp_path, html, "f-zero")


def _details(dom: str, name: str) -> str:
    start = dom.index(f"<b>{name}</b>")
    return dom[dom.rindex("<details", 0, start) : dom.index("</details>", start)]


def _ink_below_filters(tmp_path: Path, html: Path, picked: str | None) -> int:
    """Dark pixels in the lower part of a screenshot of the segments alone (the run's
    figures cut away), with the show-filter `picked` checked."""
    from PIL import Image

    text = html.read_text(encoding="utf-8")
    head = text[: text.index("<body>") + len("<body>")]
    segments = text[text.index('<div class="segs">') :]
    if picked:
        segments = segments.replace(f'class="{picked}">', f'class="{picked}" checked>', 1)
    page = tmp_path / f"segments-{picked}.html"
    page.write_text(head + segments, encoding="utf-8")
    shot = tmp_path / f"segments-{picked}.png"
    taken = chromium("--window-size=1000,800", f"--screenshot={shot}", page.as_uri())
    assert taken.returncode == 0 and Path(CHROMIUM).exists(), taken.stderr[-2000:]
    image = Image.open(shot).convert("L")
    lower = image.crop((0, 400, image.width, image.height))
    return sum(lower.histogram()[:128])
