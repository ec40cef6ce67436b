"""A name made only of invisible characters is an empty name (issue 37, item 15).

A label of two zero-width spaces, or an alias of one, was written to the source
file: it trims to itself (U+200B is no White_Space) and shows as nothing. Every
check that asks "is this name empty" — the mechanical pass, the issue pass, the
stored form, merge and the sessions answer checks — now drops the invisible
characters (format characters and the default-ignorables) with the White_Space,
and removes such a name with the line an empty name gets.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from taguru_ray.contract.piece_output import PieceOutput
from taguru_ray.contract.source_file import parse_source_file
from taguru_ray.pipeline.mechanical import Offered, judge, lossy_pass
from taguru_ray.pipeline.merge import MergeInput, MergeRules, merge_associations
from taguru_ray.pipeline.validate import Rules, collect_issues
from taguru_ray.sessions.answer import Fact
from taguru_ray.sessions.checks import _fact_problem
from taguru_ray.text.occurrence import Haystack
from taguru_ray.text.scripts import is_empty_name
from tests.test_segment_run import Canned, MemoryRecorder, ok, run

BLANKS = [
    "\u200b",
    "\u200b\u200b",
    "\u200b \u2060",
    "\ufeff",
    "\u00ad",
    "\u3164",
    " \u200d\u3000\n",
]


def answer(associations: list[tuple[str, str, str]], aliases: list[tuple[str, str]]) -> str:
    return json.dumps(
        {
            "associations": [
                {"subject": s, "label": label, "object": o, "paragraph": 1}
                for s, label, o in associations
            ],
            "aliases": [{"alias": a, "canonical": c, "kind": "concept"} for a, c in aliases],
        }
    )


@pytest.mark.parametrize("blank", BLANKS)
def test_an_invisible_label_or_alias_is_removed_as_empty_and_never_written(blank: str) -> None:
    text = answer(
        [("Ray", "runs on", "Kubernetes"), ("Ray", blank, "Kubernetes")], [(blank, "Ray")]
    )
    model = Canned(lambda _: ok(text))
    recorder = MemoryRecorder()
    outcome = run(model, recorder)
    assert outcome.status == "written" and len(model.requests) == 1
    assert [line.split("removed: ")[1] for line in outcome.notes] == [
        "associations[1]: label empty",
        "aliases[0]: alias empty",
    ]
    written = parse_source_file(recorder.files["source"])
    assert [a.triple for a in written.associations] == [("Ray", "runs on", "Kubernetes")]
    assert list(written.aliases) == []
    assert blank.strip() == "" or blank.strip() not in recorder.files["source"].decode()


@pytest.mark.parametrize("blank", BLANKS)
def test_every_emptiness_check_reads_an_invisible_name_as_empty(blank: str) -> None:
    assert is_empty_name(blank) and is_empty_name("") and not is_empty_name("a\u200b")
    item = {"subject": "Ray", "label": blank, "object": "Serve", "paragraph": 0}
    alias = {"alias": "R", "canonical": blank, "kind": "concept"}
    value: dict[str, Any] = {"associations": [item], "aliases": [alias]}
    rules = Rules(1, 0)
    assert collect_issues(value, rules) == ["associations[0].label: empty"]
    judgement = judge(value, rules, Haystack("Ray Serve R"), Offered())
    assert [r.text for r in judgement.removals] == [
        "associations[0]: label empty",
        "aliases[0]: canonical empty",
    ]
    output, dropped = lossy_pass(value, rules)
    assert output.associations == [] and [d.path for d in dropped] == ["associations[0]"]
    assert output.aliases[0]["canonical"] == ""  # an empty canonical: dangling, for Stage 2
    stored = PieceOutput([{**item, "weight": 1.0}], [], [])
    merged = merge_associations([MergeInput("p", stored)], MergeRules(1, 0, passage=True))
    assert merged == []
    fact = Fact(subject="Ray", predicate=blank, value="Serve")
    assert _fact_problem(fact, Haystack("Ray Serve"), frozenset()) == "predicate is empty"
