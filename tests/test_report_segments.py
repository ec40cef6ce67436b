"""The report's segments (issue 50, item 4): names marked where the occurrence fold finds
them, every item beside the paragraph it came from, what was lost beside it, a sample
that is the same on every report — and hostile names in any record stay text."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from taguru_ray.contract.items import Alias, Association, Question
from taguru_ray.contract.records import dumps_line
from taguru_ray.contract.records.trace import (
    AliasItem,
    AttemptRef,
    LossTrace,
    PieceTrace,
    SegmentTrace,
)
from taguru_ray.contract.source_file import Header, Passage, SourceFile, render_source_file
from taguru_ray.report import build_report
from taguru_ray.report.segments import _Seen, describe, sample, segment_view
from taguru_ray.text.occurrence import fold
from taguru_ray.text.spans import spans
from taguru_ray.tools.records import SegmentFiles, read_lines
from tests.support import CONTEXT

STEM = "seg-0123456789abcdef"
PIECE = "ab" * 32
REF = AttemptRef(run_id="r" * 16, attempt_seq=1)


def test_a_name_is_marked_where_the_occurrence_fold_finds_it() -> None:
    text = "The PostgreSQL 16 server and the Alpha  Service."
    assert [text[a:b] for a, b in spans(text, ["postgresql16", "alpha service"])] == [
        "PostgreSQL 16",
        "Alpha  Service",
    ]
    # Overlapping names merge into one mark; a name the text does not write marks nothing.
    assert [text[a:b] for a, b in spans(text, ["Alpha", "alpha service", "MongoDB"])] == [
        "Alpha  Service"
    ]
    # A character that lowercases into two (İ) is marked whole; ideographs keep their place.
    assert spans("xİy", ["i̇"]) == [(1, 2)]
    assert spans("青嶺酒造の杜氏・高瀬正一は", ["高瀬正一"]) == [(8, 12)]


@given(st.text(max_size=40), st.text(min_size=1, max_size=4))
def test_a_mark_holds_the_name_under_the_fold(text: str, name: str) -> None:
    for start, end in spans(text, [name]):
        assert fold(name) in fold(text[start:end])


def test_the_sample_is_the_empty_segments_then_the_lowest_hashes_in_name_order() -> None:
    seen = [_Seen(i, f"docs/{i:03}.md", zero=i in (5, 7, 9)) for i in range(40)]
    chosen, how = sample(seen, 10)
    assert chosen == sorted(chosen) and len(chosen) == 10
    assert {5, 7, 9} <= set(chosen)
    assert sample(list(reversed(seen)), 10)[0] == chosen  # the order given changes nothing
    assert how is not None and "the first 3 (in name order) of the 3 that wrote no" in how
    # Half the page at most goes to empty segments.
    all_zero = [_Seen(i, f"{i}", zero=True) for i in range(40)]
    assert sum(1 for i in sample(all_zero, 10)[0] if i < 5) == 5
    assert sample(seen[:10], 10) == (list(range(10)), None)


def _files(source: SourceFile, trace: list[dict[str, object]]) -> SegmentFiles:
    data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in trace).encode()
    return SegmentFiles(STEM, read_lines(data), None, render_source_file(source))


def _header(source: str = "docs/alpha.md") -> Header:
    return Header(source, CONTEXT)


def test_each_item_sits_beside_the_paragraph_it_came_from() -> None:
    passage = "# Alpha\n\nThe Alpha Service stores records in Postgres.\n\nPG keeps a log.\n"
    source = SourceFile(
        _header(),
        Passage(passage),
        questions=[Question(1, "Where are records stored?")],
        associations=[
            Association("Alpha Service", "stores in", "Postgres", 1.0, 1),
            Association("Alpha Service", "runs on", "Kubernetes", 1.0, 1),
            Association("Postgres", "keeps", "log", 1.0, None),
        ],
        aliases=[Alias("PG", "Postgres", "concept")],
    )
    trace = [
        PieceTrace(piece_id=PIECE, chunk_index=0, chunk_sha256=PIECE, piece_bytes=80,
                   paragraph_first=0, paragraph_last=2, reused=False, attempt=REF).record(),
        AliasItem(item="concept", alias="PG", canonical="Postgres", piece_id=PIECE).record(),
        LossTrace(item="association", reason="removed", rule='object "MongoDB" does not appear '
                  "in the segment text", path="associations[3]", raw={"subject": "Alpha Service",
                  "label": "uses", "object": "MongoDB"}, piece_id=PIECE, attempt=REF, paragraph=1,
                  text="The Alpha Service stores records in Postgres.").record(),
        LossTrace(item="question", reason="dropped", rule="question is empty", path=None,
                  raw={"paragraph": 9, "question": ""}, piece_id=PIECE, attempt=REF,
                  text=passage).record(),
    ]  # fmt: skip
    view = segment_view("out", "docs/alpha.md", _files(source, trace))
    first, second, third = view.paragraphs
    assert first.empty and view.hidden == 0
    assert [a.object for a in second.associations] == ["Postgres", "Kubernetes"]
    assert [second.text[a:b] for a, b in second.marks] == ["Alpha Service", "Postgres"]
    assert second.holds("Postgres") and not second.holds("Kubernetes")
    assert [q.question for q in second.questions] == ["Where are records stored?"]
    assert [(lost.reason, lost.shown) for lost in second.lost] == [
        ("removed", "Alpha Service | uses | MongoDB")
    ]
    # The alias cites no paragraph: it sits where its piece first writes its spelling.
    assert third.aliases == [Alias("PG", "Postgres", "concept")]
    assert [third.text[a:b] for a, b in third.marks] == ["PG"]
    # What cites no paragraph is the segment's own.
    assert [a.object for a in view.loose.associations] == ["log"]
    assert [lost.item for lost in view.loose.lost] == ["question"]
    assert (view.associations, view.aliases, view.questions) == (3, 1, 1)
    assert dict(view.lost) == {"removed": 1, "dropped": 1} and not view.zero


def test_a_session_fact_has_its_quote_marked() -> None:
    """A session's source file cites the paragraph of the turn its quote came from; the
    trace's fact record carries the verbatim quote, which is marked whole."""
    passage = "⟦s#1 user⟧ We moved the cache to Redis because Memcached kept evicting keys.\n"
    source = SourceFile(
        _header("session:claude:s"),
        Passage(passage),
        associations=[Association("cache", "moved to", "Redis", 1.0, 0)],
    )
    fact = {"type": "fact", "stage": "decisions", "seq": 1,
            "quote": "moved the cache to Redis because Memcached", "subject": "cache",
            "predicate": "moved to", "value": "Redis"}  # fmt: skip
    (paragraph,) = segment_view("out", "s", _files(source, [fact])).paragraphs
    assert [paragraph.text[a:b] for a, b in paragraph.marks] == [
        "moved the cache to Redis because Memcached"
    ]


def test_a_lost_item_is_said_in_one_line_whatever_its_shape() -> None:
    assert describe({"alias": "PG", "canonical": "Postgres", "kind": "concept"}) == (
        "PG → Postgres (concept)"
    )
    assert describe({"paragraph": 2, "question": "Why?"}) == "[2] Why?"
    assert describe("not an association") == "not an association"
    assert describe({"x": "y" * 400}).endswith("…") and len(describe(["z" * 400])) == 301


# Each hostile value carries markup that, unescaped anywhere, adds a tag the page never
# writes or an event attribute — so one spot left unescaped fails the test.
MARKUP = (
    "<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "<iframe srcdoc=x>",
    "<a href=javascript:alert(1)>x</a>", "<svg onload=alert(1)>",
    "<details open ontoggle=alert(1)>", "</details><script>x</script>", '"><script>x</script>',
    "'><img src=x onerror=y>", "</style><script>x</script>", "<!--<script>x</script>-->",
)  # fmt: skip
FRAGMENTS = ("&amp;", "&", '"', "'", "</td>", "</q>", " ", "\u3000", "Ａ", "x", "\n", "`")
_plain = st.lists(st.sampled_from(FRAGMENTS) | st.text(min_size=1, max_size=3), max_size=3).map(
    "".join
)
hostile = (
    st.tuples(_plain, st.sampled_from(MARKUP), _plain)
    .map("".join)
    .filter(lambda s: "\x00" not in s and "\r" not in s)
)
TAGS = {
    "html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "h4", "p", "div",
    "span", "b", "section", "table", "tr", "th", "td", "details", "summary", "mark", "ul", "li",
    "q", "code", "fieldset", "legend", "label", "input", "svg", "text", "line", "rect",
    "polyline",
}  # fmt: skip


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: set[str] = set()
        self.attributes: set[str] = set()
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.attributes |= {name for name, _ in attrs}

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def handle_comment(self, data: str) -> None:
        self.tags.add("<!-- comment -->")  # the page writes none


@given(subject=hostile, label=hostile, object_=hostile, alias=hostile, rule=hostile,
       source=hostile)  # fmt: skip
def test_hostile_names_in_any_record_stay_text(
    tmp_path_factory: pytest.TempPathFactory,
    subject: str, label: str, object_: str, alias: str, rule: str, source: str,
) -> None:  # fmt: skip
    if alias in (subject, object_, label):
        return  # an alias must differ from every name the associations use
    out = tmp_path_factory.mktemp("hostile")
    passage = f"{subject} and {object_} as {alias}\n\n{rule}\n"
    written = SourceFile(
        _header(source),
        Passage(passage),
        associations=[Association(subject, label, object_, 1.0, 0)],
        aliases=[Alias(alias, subject, "concept"), Alias(alias, label, "label")],
    )
    (out / f"{STEM}.jsonl").write_bytes(render_source_file(written))
    trace = [
        SegmentTrace(run_id="r" * 16, source=source, segment_sha256="0" * 64,
                     batch_path=f"out/{STEM}.jsonl", chunk_total=1).record(),
        PieceTrace(piece_id=PIECE, chunk_index=0, chunk_sha256=PIECE, piece_bytes=1,
                   paragraph_first=0, paragraph_last=1, reused=False, attempt=REF).record(),
        AliasItem(item="concept", alias=alias, canonical=subject, piece_id=PIECE).record(),
        LossTrace(item="association", reason="removed", rule=rule, path=f"associations[{rule}]",
                  raw={"subject": subject, "label": label, "object": rule}, piece_id=PIECE,
                  attempt=REF, paragraph=0, text=passage).record(),
        LossTrace(item="alias", reason="dropped", rule=rule, raw=rule, piece_id=PIECE,
                  attempt=REF, text=passage).record(),
    ]  # fmt: skip
    (out / ".extract-trace").mkdir()
    (out / ".extract-trace" / f"{STEM}.jsonl").write_bytes(b"".join(map(dumps_line, trace)))
    page = _Page()
    page.feed(build_report([str(out)]))
    page.close()
    assert page.tags <= TAGS, page.tags - TAGS
    assert not [name for name in page.attributes if name.startswith("on")]
    text = "".join(page.text)
    for said in (subject, label, object_, alias, rule, source):
        assert said in text


def test_a_source_file_import_would_refuse_is_named_not_fatal(tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / ".extract-trace").mkdir(parents=True)
    (out / f"{STEM}.jsonl").write_text('{"subject":"a"}\n', encoding="utf-8")
    record = SegmentTrace(run_id="r" * 16, source="docs/a.md", segment_sha256="0" * 64,
                          batch_path=f"out/{STEM}.jsonl", chunk_total=1).record()  # fmt: skip
    (out / ".extract-trace" / f"{STEM}.jsonl").write_bytes(dumps_line(record))
    page = build_report([str(out)])
    assert f"import would refuse {STEM}.jsonl: line 1: " in page
    assert "source file refused: " in page  # and in the segment's own view
