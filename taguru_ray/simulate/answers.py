"""The simulator's stand-in for a model: a rule-based extractor.

`answer(messages)` reads the `[N]`-labelled blocks of the FIRST user turn and
returns one compact JSON object `{"associations":[...],"aliases":[],
"questions":[]}` in the answer contract's shape. It is a pure function: the
same messages give byte-identical text, and every name it emits occurs
verbatim in the block it came from, so a run against the simulator passes
the occurrence checks and writes the same bytes every time.

It always answers from the first user turn, so a corrective conversation
(system, user, assistant, user) gets the same answer as the first ask; that
is what a perfectly consistent model would do.

The rules, per block, in order of first appearance:

- Latin names: a capitalised word (`Ray`, `S3`, `Node.js`) or an identifier
  (`cargo-nextest`, `max_conn`, `k8s`); consecutive capitalised words joined
  by single spaces form one name (`Object Storage`, at most four words).
  Common English function words (`The`, `This`, ...) never count.
- Katakana runs of two or more characters, kanji runs (U+4E00-9FFF plus 々)
  of two or more characters.
- `Name (Abbrev)` / `名前（略称）`: the parenthesised short name is an alias
  of the name it follows, not a name of its own.

Consecutive names are chained into up to four associations per block; the
label comes from a stable hash of the pair.

A chunk-context block (`--chunk-context`) between the preamble and the chunk
is never read: only `[N]`-labelled blocks are, so a turn answers the same with
or without one.

The overview ask (`--chunk-context overview`, told apart by its system turn)
gets `{"units":[...],"cast":[...]}` instead (`overview_for_turn`): for each
listed unit the first sentence after its heading, and the chunk's names as
the cast.

Its length (over 400 lines) is the simulated model's: each ask the pipeline
makes (extraction, correction, gleaning, overview) gets its answer here.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from taguru_ray.simulate.names import JAPANESE_CHAR, names_and_aliases, names_in

LATIN_LABELS = ("related to", "part of", "uses", "depends on")
JAPANESE_LABELS = ("関連", "含む", "使用")
MAX_ASSOCIATIONS_PER_BLOCK = 4

EMPTY_ANSWER = '{"associations":[],"aliases":[],"questions":[]}'

_LABEL = re.compile(r"\[(\d+)\] ")


@dataclass(frozen=True)
class Block:
    """One `[N] text` block of a chunk."""

    paragraph: int
    text: str


def estimate_tokens(text: str | None) -> int:
    """The simulator's token count: ceil(utf-8 bytes / 4), 0 for no text."""
    return math.ceil(len(text.encode("utf-8")) / 4) if text else 0


def cut_utf8(text: str, max_bytes: int) -> str:
    """The longest prefix of `text` that fits in `max_bytes` UTF-8 bytes."""
    return text.encode("utf-8")[:max_bytes].decode("utf-8", errors="ignore")


def content_text(content: object) -> str:
    """The text of a message `content`: a string, or OpenAI content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part["text"]
            for part in content
            if isinstance(part, Mapping) and isinstance(part.get("text"), str)
        )
    return ""


def first_user_turn(messages: Iterable[Mapping[str, Any]]) -> str | None:
    """The content of the first message with role "user", or None."""
    for message in messages:
        if message.get("role") == "user":
            return content_text(message.get("content"))
    return None


def answer(messages: Sequence[Mapping[str, Any]]) -> str:
    """The extraction for a conversation, as compact JSON text.

    An overview ask (see `is_overview_ask`) gets `overview_for_turn` instead.
    When the system turn asks for retrieval questions ("up to N retrieval
    question(s) per paragraph", taguru-ray's --questions wording), the answer
    carries that many per paragraph, each naming one of the paragraph's names.
    """
    turn = first_user_turn(messages)
    if turn is None:
        return EMPTY_ANSWER
    system = next(
        (content_text(m.get("content")) for m in messages if m.get("role") == "system"), ""
    )
    if is_overview_ask(system):
        return overview_for_turn(turn)
    from taguru_ray.simulate import memory, sessions  # late: they import the sessions prompts

    if memory.is_card_ask(system):
        return memory.card_answer(turn)
    if memory.is_brief_ask(system):
        return memory.brief_answer(turn)

    if sessions.is_sessions_ask(system):
        return sessions.batch_answer(turn, system)
    if sessions.is_review_ask(system):
        return sessions.review_answer(turn)
    last = content_text(messages[-1].get("content")) if messages else ""
    if messages[-1].get("role") == "user" and _GLEAN_ASK in last:
        return gleaned_for_turn(turn)
    asked = _QUESTIONS_ASK.search(system)
    return answer_for_turn(turn, int(asked.group(1)) if asked else 0)


def blocks_of(user_turn: str) -> list[Block]:
    """The labelled blocks of a user turn's chunk.

    The chunk is everything after the first blank line (the preamble names the
    segment); a turn with no blank line is taken whole, so a hand-written
    request of bare `[N]` blocks works too. Groups of lines that do not start
    with a `[N] ` label (a chunk-context block) are not part of the haystack
    and are skipped.
    """
    lines = user_turn.split("\n")
    blank = [i for i, line in enumerate(lines) if not line.strip()]
    body = lines[blank[0] + 1 :] if blank else lines
    blocks: list[Block] = []
    group: list[str] = []
    for line in [*body, ""]:
        if line.strip():
            group.append(line)
            continue
        label = _LABEL.match(group[0]) if group else None
        if label:
            text = "\n".join(group)[label.end() :]
            blocks.append(Block(int(label.group(1)), text))
        group = []
    return blocks


# Cached because the server sees the same chunk many times (retries,
# corrective turns, benchmarks); the function is pure, so caching is safe.
@functools.lru_cache(maxsize=4096)
def answer_for_turn(user_turn: str, questions_per_paragraph: int = 0) -> str:
    """The extraction for one user turn, as compact JSON text."""
    associations: list[dict[str, Any]] = []
    questions: list[dict[str, Any]] = []
    seen: set[tuple[str, str, str]] = set()
    candidates: list[tuple[str, str]] = []
    for block in blocks_of(user_turn):
        names, aliases = names_and_aliases(block.text)
        emitted = 0
        for subject, obj in itertools.pairwise(names):
            if emitted == MAX_ASSOCIATIONS_PER_BLOCK:
                break
            triple = (subject, label_for(subject, obj), obj)
            if triple in seen:
                continue
            seen.add(triple)
            associations.append(
                {
                    "subject": subject,
                    "label": triple[1],
                    "object": obj,
                    "weight": 1.0,
                    "paragraph": block.paragraph,
                }
            )
            emitted += 1
        candidates.extend(aliases)
        questions.extend(
            {"paragraph": block.paragraph, "question": _question(name)}
            for name in names[:questions_per_paragraph]
        )
    used = {a["subject"] for a in associations} | {a["object"] for a in associations}
    aliases_out: list[dict[str, str]] = []
    claimed: set[str] = set()
    for alias, canonical in candidates:
        if canonical in used and alias not in used and alias not in claimed:
            claimed.add(alias)
            aliases_out.append({"alias": alias, "canonical": canonical, "kind": "concept"})
    out = {"associations": associations, "aliases": aliases_out, "questions": questions}
    return json.dumps(out, ensure_ascii=False, separators=(",", ":"))


_QUESTIONS_ASK = re.compile(r"up to (\d+) retrieval question")
_GLEAN_ASK = "what you missed"  # taguru-ray's gleaning ask (--gleanings)


@functools.lru_cache(maxsize=1024)
def gleaned_for_turn(user_turn: str) -> str:
    """A second pass's "what did I miss": the names two apart in each block, which the
    first pass (consecutive names only) never paired."""
    associations = []
    for block in blocks_of(user_turn):
        names = names_in(block.text)
        for subject, obj in zip(names, names[2:], strict=False):
            associations.append(
                {
                    "subject": subject,
                    "label": label_for(subject, obj),
                    "object": obj,
                    "weight": 1.0,
                    "paragraph": block.paragraph,
                }
            )
    out = {"associations": associations[:8], "aliases": [], "questions": []}
    return json.dumps(out, ensure_ascii=False, separators=(",", ":"))


# The first sentence of taguru-ray's overview system prompt
# (`taguru_ray.pipeline.overview.OVERVIEW_SYSTEM`); a test keeps the two in step.
_OVERVIEW_ASK = "so that a later reader of each part knows what came before it"
_OVERVIEW_UNIT = re.compile(r"- unit (\d+): (.+)")
_SENTENCE = re.compile(r".+?(?:[。！？]|[.!?](?=\s|$))")
_CAPTION_LINE = re.compile(r"（[^（）]+）|\([^()]+\)")
_FOLD = re.compile(r"\s+")
MAX_CAST = 12
MAX_SUMMARY_CHARS = 200


def is_overview_ask(system: str) -> bool:
    """Whether a system turn is the overview ask (`--chunk-context overview`)."""
    return _OVERVIEW_ASK in system


def overview_units(user_turn: str) -> list[tuple[int, str]]:
    """The `- unit <n>: <heading>` lines an overview user turn lists before its chunk."""
    head = user_turn.split("\n\n", 1)[0]
    found = (_OVERVIEW_UNIT.fullmatch(line.strip()) for line in head.split("\n"))
    return [(int(m.group(1)), m.group(2).strip()) for m in found if m]


@functools.lru_cache(maxsize=1024)
def overview_for_turn(user_turn: str) -> str:
    """The overview of one chunk, as compact JSON text.

    `units`: for each listed unit whose heading line is found in the chunk,
    the first sentence of the text after it (the rest of the heading line
    first; caption lines like `（目的）` skipped; running on into a nested unit
    when the unit has no words of its own), at most 200 characters. A unit
    with no text after it is left out. `cast`: the chunk's names in order of
    first appearance, at most 12, each glossed by its first paragraph.
    """
    listed = overview_units(user_turn)
    blocks = blocks_of(user_turn)
    lines = [_FOLD.sub(" ", line).strip() for b in blocks for line in b.text.split("\n")]
    # Each listed unit's heading line, in order: the first line at or after
    # the previous unit's that opens with the heading.
    at: dict[int, tuple[int, str]] = {}
    start = 0
    for unit, heading in listed:
        for i in range(start, len(lines)):
            rest = _after_heading(lines[i], heading)
            if rest is not None:
                at[unit] = (i, rest)
                start = i + 1
                break
    heading_lines = {i: rest for i, rest in at.values()}
    units = []
    for unit, _ in listed:
        if unit not in at:
            continue
        i, rest = at[unit]
        own: list[str] = [rest]  # the unit's own words, up to the next listed heading
        later: list[str] = []  # what follows from there on
        for j in range(i + 1, len(lines)):
            text = lines[j]
            if j in heading_lines:
                text = heading_lines[j]
                if not later:
                    later.append("")  # from here on, words are the next unit's
            if not _CAPTION_LINE.fullmatch(text):
                (later if later else own).append(text)
        own_text = " ".join(w for w in own if w)
        summary = _first_sentence(own_text or " ".join(w for w in later if w))
        if summary:
            units.append({"unit": unit, "summary": summary})
    cast: dict[str, int] = {}
    for block in blocks:
        for name in names_in(block.text):
            cast.setdefault(name, block.paragraph)
    out = {
        "units": units,
        "cast": [
            {"name": name, "gloss": f"named in paragraph {paragraph}"}
            for name, paragraph in list(cast.items())[:MAX_CAST]
        ],
    }
    return json.dumps(out, ensure_ascii=False, separators=(",", ":"))


def _after_heading(line: str, heading: str) -> str | None:
    """The rest of `line` past `heading` when the line opens with it, else None.

    The line is read without Markdown `#` marks; an article captioned on the
    line before (`第一条（目的）` is listed, `第一条　…` is the line) matches by
    its number.
    """
    line = line.lstrip("#").strip()
    keys = [heading]
    caption = re.search(r"[（(][^（）()]*[）)]$", heading)
    if caption and caption.start() > 0:
        keys.append(heading[: caption.start()].strip())
    for key in keys:
        if line == key:
            return ""
        if line.startswith(key + " "):
            return line[len(key) :].strip(" #")
    return None


def _first_sentence(text: str) -> str:
    """The first sentence of `text`, one-lined, at most 200 characters."""
    text = text.strip()
    match = _SENTENCE.match(text)
    sentence = match.group() if match else text
    if len(sentence) > MAX_SUMMARY_CHARS:
        sentence = sentence[: MAX_SUMMARY_CHARS - 1].rstrip() + "…"
    return sentence


def _question(name: str) -> str:
    if any(ord(char) > 0x2E80 for char in name):
        return f"{name}とは何ですか?"
    return f"What is {name} for?"


def label_for(subject: str, obj: str) -> str:
    """The relation label the simulator gives the pair: a stable hash of the two names
    picks one of the labels of their script."""
    labels = (
        JAPANESE_LABELS
        if JAPANESE_CHAR.search(subject) or JAPANESE_CHAR.search(obj)
        else LATIN_LABELS
    )
    digest = hashlib.sha256(f"{subject}\n{obj}".encode()).digest()
    return labels[digest[0] % len(labels)]
