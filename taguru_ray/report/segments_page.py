"""The report's segments section, as HTML: counts, the most frequent labels and concepts,
names under two spellings, then a ``<details>`` per segment whose paragraphs sit beside
what was extracted from each and what was removed, and why.

Still no script (ADR 0056, 0076): a segment is a closed ``<details>``, which the
browser's find-in-page searches and opens; the filters are radio buttons that CSS
``:has()`` reads (`FILTER_STYLE`), so "only segments with a removed item" or "only
segments using label X" needs nothing but the page. Every text from the records is
escaped; a class or a name attribute is built from numbers only.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from taguru_ray.report import figures
from taguru_ray.report.segments import Knowledge, Lost, Paragraph, SegmentView

TOP_LABELS = 20  # rows of the label table
TOP_CONCEPTS = 20
SPELLINGS = 50  # rows of the two-spellings table
LABEL_FILTERS = 12  # labels offered as filters (one CSS rule each)
REFUSED = 10  # source files the import parser refused, named one by one
SHOW = (  # (class, the segment class it keeps, what the button says)
    ("f-lost", "lost", "with a removed, dropped or folded item"),
    ("f-zero", "zero", "wrote no association"),
    ("f-alias", "alias", "with aliases"),
    ("f-failed", "failed", "failed"),
)
FILTER_STYLE = (
    ".para{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:4px 16px;"
    "border-top:1px solid #eee;padding:4px 0}.para .text{white-space:pre-wrap;margin:0}"
    ".pn{color:#777;font-variant-numeric:tabular-nums;margin-right:4px}.loc{color:#777}"
    "mark{background:#fde68a}details.seg{border:1px solid #ddd;margin:4px 0;padding:2px 8px}"
    "details.seg>summary{cursor:pointer}details.seg.zero>summary b,.lost li b{color:#b45309}"
    "td.miss{color:#b91c1c;text-decoration:underline dotted}.side ul{margin:2px 0;"
    "padding-left:18px}.filter{border:1px solid #ddd;margin:6px 0}.filter label{margin-right:"
    "12px;white-space:nowrap}.cmd{font-family:monospace;overflow-wrap:anywhere}"
    + "".join(
        f".segs:has(input.{button}:checked) details.seg:not(.{kept}){{display:none}}"
        for button, kept, _ in SHOW
    )
    + "".join(
        f".segs:has(input.l{i}:checked) details.seg:not(.l{i}){{display:none}}"
        f".segs:has(input.l{i}:checked) tr.l{i} td{{background:#fde68a}}"
        for i in range(LABEL_FILTERS)
    )
)


def knowledge_section(knowledge: Knowledge, out: str, number: int) -> str:
    """The section for one --out; `number` keeps its radio groups apart from another run's."""
    tally = knowledge.tally
    lost = {reason: 0 for reason in ("removed", "dropped", "duplicate")}
    for (_, reason), count in knowledge.lost.items():
        lost[reason] = lost.get(reason, 0) + count
    values = [
        (knowledge.segments, "segments"),
        (tally.associations, "associations"),
        (len(tally.labels), "labels"),
        (len(tally.concepts), "concepts"),
        (tally.concept_aliases, "concept aliases"),
        (tally.label_aliases, "label aliases"),
        (tally.questions, "questions"),
        *((count, f"items {reason}") for reason, count in lost.items()),
        (knowledge.zero, "segments wrote no association"),
    ]
    parts = [
        '<div class="kv">'
        + "".join(f"<span><b>{value}</b> {escape(what)}</span>" for value, what in values)
        + "</div>"
    ]
    if knowledge.zero:
        parts.append(
            f'<p class="note">{knowledge.zero} segment(s) wrote 0 associations: pick “wrote no '
            "association” below to see what their answers held and what removed it.</p>"
        )
    refused = knowledge.refused
    parts += [f'<p class="note">import would refuse {escape(r)}</p>' for r in refused[:REFUSED]]
    if len(refused) > REFUSED:
        parts.append(f'<p class="note">… and {len(refused) - REFUSED} more such files</p>')
    parts.append(_labels(knowledge))
    parts.append(_concepts(knowledge))
    parts.append(_spellings(knowledge))
    parts.append(_lost_table(knowledge))
    parts.append(_segments(knowledge, out, number))
    return "\n".join(parts)


def _labels(knowledge: Knowledge) -> str:
    tally = knowledge.tally
    top = tally.labels.most_common(TOP_LABELS)
    if not top:
        return figures.empty("no association: no label to count")
    rows = [
        [label, count, f"{count / tally.associations:.1%}", tally.label_segments[label]]
        for label, count in top
    ]
    return (
        f"<h4>Most frequent labels (top {len(top)} of {len(tally.labels)})</h4>"
        + figures.bars("associations per label", [(name, float(n)) for name, n in top], "")
        + _table(["label", "associations", "share", "segments"], rows)
    )


def _concepts(knowledge: Knowledge) -> str:
    tally = knowledge.tally
    concepts = tally.concepts
    top = sorted(concepts.items(), key=lambda item: (-item[1], item[0]))[:TOP_CONCEPTS]
    if not top:
        return ""
    rows = [
        [name, uses, tally.as_subject[name], tally.as_object[name], tally.concept_segments[name]]
        for name, uses in top
    ]
    return f"<h4>Most used concepts (top {len(top)} of {len(concepts)})</h4>" + _table(
        ["concept", "uses", "as subject", "as object", "segments"], rows
    )


def _spellings(knowledge: Knowledge) -> str:
    groups = knowledge.tally.spellings()
    head = "<h4>Names under two spellings</h4>"
    if not groups:
        return head + figures.empty(
            "no name is written two ways that differ only in case or spacing"
        )
    note = (
        '<p class="note">Spellings that differ only in case or spacing: one name to a reader '
        "and to the occurrence check, two to import unless an alias joins them.</p>"
    )
    rows = [
        [group.kind, " · ".join(f"{name} ({count})" for name, count in group.spellings)]
        for group in groups[:SPELLINGS]
    ]
    more = len(groups) - SPELLINGS
    tail = f'<p class="note">… and {more} more</p>' if more > 0 else ""
    return head + note + _table(["kind", "spellings (uses)"], rows) + tail


def _lost_table(knowledge: Knowledge) -> str:
    if not knowledge.lost:
        return ""
    rows = [[item, reason, count] for (item, reason), count in sorted(knowledge.lost.items())]
    return "<h4>Items that did not reach the files</h4>" + _table(["item", "reason", "count"], rows)


def _segments(knowledge: Knowledge, out: str, number: int) -> str:
    labels = [label for label, _ in knowledge.tally.labels.most_common(LABEL_FILTERS)]
    index = {label: i for i, label in enumerate(labels)}
    parts = ['<div class="segs">', "<h4>Segments</h4>"]
    if knowledge.sampled:
        parts.append(
            f'<p class="note">{escape(knowledge.sampled)}. Any other segment: '
            f"<code>taguru_ray.associations({escape(repr(out))}, texts=True)</code> in Python, "
            "or its attempts log with <code>taguru-ray inspect "
            f"{escape(out.rstrip('/'))}/.extract-trace/&lt;stem&gt;.attempts.jsonl "
            "--paragraph N</code>.</p>"
        )
    parts.append(
        '<p class="note">Each segment opens to its paragraphs, each beside what was extracted '
        "from it and what was removed; a name is marked where the occurrence check finds it, "
        "a name in red is not written in its paragraph. Find in page (Ctrl+F) searches the "
        "closed segments too.</p>"
    )
    parts.append(_filters(number, labels, knowledge.tally.labels))
    parts += [_segment(view, index) for view in knowledge.shown]
    if not knowledge.shown:
        parts.append(figures.empty("no segment"))
    parts.append("</div>")
    return "\n".join(parts)


def _filters(number: int, labels: Sequence[str], counts: dict[str, int]) -> str:
    show = [f'<label><input type="radio" name="show{number}" checked> all</label>']
    show += [
        f'<label><input type="radio" name="show{number}" class="{button}"> {escape(said)}</label>'
        for button, _, said in SHOW
    ]
    picked = [f'<label><input type="radio" name="label{number}" checked> any</label>']
    picked += [
        f'<label><input type="radio" name="label{number}" class="l{i}"> '
        f"{escape(label)} ({counts[label]})</label>"
        for i, label in enumerate(labels)
    ]
    return (
        f'<fieldset class="filter"><legend>show</legend>{"".join(show)}</fieldset>'
        f'<fieldset class="filter"><legend>label</legend>{"".join(picked)}</fieldset>'
    )


def _segment(view: SegmentView, index: dict[str, int]) -> str:
    classes = ["seg"]
    classes += ["lost"] if sum(view.lost.values()) else []
    classes += ["zero"] if view.zero else []
    classes += ["alias"] if view.aliases else []
    classes += ["failed"] if view.status == "failed" else []
    classes += sorted(f"l{index[label]}" for label in view.labels if label in index)
    said = [
        f"{view.associations} association(s)",
        f"{view.aliases} alias(es)",
        f"{view.questions} question(s)",
    ]
    said += [f"{count} {reason}" for reason, count in sorted(view.lost.items())]
    if view.status != "written":
        said.insert(0, view.status)
    parts = [
        f'<details class="{" ".join(classes)}"><summary><b>{escape(view.name)}</b> — '
        f"{escape(', '.join(said))}</summary>"
    ]
    if view.inspect:
        parts.append(f'<p class="note cmd">{escape(view.inspect)}</p>')
    if view.error:
        parts.append(f'<p class="note">source file refused: {escape(view.error)}</p>')
    if view.status == "failed":
        parts.append(
            '<p class="note">failed: no source file, no trace — the attempts log holds every '
            "completion it had.</p>"
        )
    elif not view.passage:
        parts.append(
            '<p class="note">no passage in the source file (--no-passage): items are listed '
            "without their paragraphs.</p>"
        )
    parts += [_paragraph(paragraph, index) for paragraph in view.paragraphs]
    if view.hidden:
        parts.append(
            f'<p class="note">… {view.hidden} more paragraph(s) not shown: '
            f"{escape(view.inspect or 'taguru-ray inspect')} --paragraph N</p>"
        )
    if not view.loose.empty:
        parts.append(_paragraph(view.loose, index))
    parts.append("</details>")
    return "".join(parts)


def _paragraph(paragraph: Paragraph, index: dict[str, int]) -> str:
    """The paragraph's text with its names marked, and beside it what came of it."""
    if paragraph.index is None:
        head = '<span class="pn">no paragraph cited</span>'
        text = ""
    else:
        # A locator (page, slide, heading path) is shown after the number when known.
        where = paragraph.locator
        locator = f' <span class="loc">{escape(where)}</span>' if where else ""
        head = f'<span class="pn">[{paragraph.index}]</span>{locator} '
        text = _marked(paragraph)
        if paragraph.more:
            text += f' <span class="note">… ({paragraph.more} more characters)</span>'
    side = []
    if paragraph.associations:
        rows = []
        for a in paragraph.associations:
            label_class = f' class="l{index[a.label]}"' if a.label in index else ""
            rows.append(
                f"<tr{label_class}>{_name(a.subject, paragraph)}<td>{escape(a.label)}</td>"
                f'{_name(a.object, paragraph)}<td class="n">{a.weight:g}</td></tr>'
            )
        side.append(f'<table class="items">{"".join(rows)}</table>')
    if paragraph.aliases:
        side.append(
            '<ul class="aliases">'
            + "".join(
                f"<li>{escape(a.alias)} → {escape(a.canonical)} ({escape(a.kind)} alias)</li>"
                for a in paragraph.aliases
            )
            + "</ul>"
        )
    if paragraph.questions:
        side.append(
            '<ul class="questions">'
            + "".join(f"<li>? {escape(q.question)}</li>" for q in paragraph.questions)
            + "</ul>"
        )
    if paragraph.lost:
        side.append('<ul class="lost">' + "".join(_lost(lost) for lost in paragraph.lost) + "</ul>")
    if not side:
        side.append('<span class="note">nothing extracted</span>')
    return (
        f'<div class="para"><p class="text">{head}{text}</p>'
        f'<div class="side">{"".join(side)}</div></div>'
    )


def _marked(paragraph: Paragraph) -> str:
    out, at = [], 0
    for start, end in paragraph.marks:
        out.append(escape(paragraph.text[at:start]))
        out.append(f"<mark>{escape(paragraph.text[start:end])}</mark>")
        at = end
    out.append(escape(paragraph.text[at:]))
    return "".join(out)


def _name(name: str, paragraph: Paragraph) -> str:
    if paragraph.index is None or paragraph.holds(name):
        return f"<td>{escape(name)}</td>"
    return f'<td class="miss" title="not written in this paragraph">{escape(name)}</td>'


def _lost(lost: Lost) -> str:
    path = f" <code>{escape(lost.path)}</code>" if lost.path else ""
    return (
        f"<li><b>{escape(lost.reason)}</b> {escape(lost.item)} <q>{escape(lost.shown)}</q>"
        f"{path}: {escape(lost.rule)}</li>"
    )


def _table(head: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    out = ["<table><tr>", *(f"<th>{escape(h)}</th>" for h in head), "</tr>"]
    for row in rows:
        out.append("<tr>")
        for value in row:
            if isinstance(value, int) and not isinstance(value, bool):
                out.append(f'<td class="n">{value}</td>')
            else:
                out.append(f"<td>{escape(str(value))}</td>")
        out.append("</tr>")
    out.append("</table>")
    return "".join(out)
