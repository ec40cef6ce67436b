"""Seeded run-to-run variability of the simulator's answers (`--vary P`).

A real model at temperature 0 still answers a prompt a little differently from
one run to the next; the rule-based extractor never does, so a benchmark's
stability figures against it are trivially 1.0. With `--vary P` (P > 0) each
association of an extraction answer is, with probability P, changed in one of
four ways, and with probability P/4 joined by one extra association:

- `drop`: left out;
- `weight`: its weight flipped in sign (-w) or scaled (0.5, 0.75, 1.5 or 2 x w);
- `paragraph`: re-attributed to a neighbouring paragraph of the same chunk
  (the previous or next `[N]` block of the user turn; none → `weight` instead);
- `label`: its label respelled in another case (`Related to`, `Related To`,
  `RELATED TO`; a label with no case, a Japanese one → `weight` instead);
- the extra: the same two names the other way round, `(object, label, subject)`,
  on the same paragraph, unless the answer already holds that triple.

Aliases whose canonical no longer names an association (its associations all
dropped) are dropped with them, so a varied answer raises no Stage 2 prune.
Questions, overview answers and anything that is not an extraction answer pass
unchanged, as does every answer when P = 0 (byte for byte).

Every choice is a hash, not a draw: sha256 of (vary seed, run, sha256 of the
first user turn, what is being decided, the association as
`[subject, label, object, paragraph]`). So the same seed, run and prompt give
the same answer from any simulator instance, in any request order, under any
concurrency, on a retry and on a corrective turn alike; another run or seed
gives another answer. An association is decided on its own, never by its
position, so dropping one does not reshuffle the others.

**The run.** A request's run is the number after `#run` at the end of its model
name (`taguru-sim#run2`, `qwen#run02` — the benchmark's `run<NN>` label reads
the same), else the simulator's `--vary-run` (default 0). A model name is the
one thing every client already sends per request (`--model`,
`TAGURU_EXTRACT_MODEL`, a benchmark models.json `model`), and it is a compute
input of extract, so two runs that differ only in their run re-extract instead
of being skipped as unchanged. One simulator per run with `--vary-run N` needs
no change to the model name at all.

Every varied answer stays valid under the extract contract: names are the
rule-based answer's own (they occur in the text), labels stay non-empty and at
least two characters, weights finite, non-zero and far below the 1e6 cap,
paragraphs only those the user turn labels.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from typing import Any

from taguru_ray.simulate.answers import blocks_of, label_for

VARIATIONS = ("drop", "weight", "paragraph", "label")
WEIGHT_FACTORS = (-1.0, 0.5, 0.75, 1.5, 2.0)
EXTRA_SHARE = 0.25  # the extra association's probability, as a share of P
_RUN_SUFFIX = re.compile(r"#run(\d{1,9})\Z")


def run_of(model: str, default: int = 0) -> int:
    """The run a request belongs to: `#run<N>` ending its model name, else `default`."""
    found = _RUN_SUFFIX.search(model)
    return int(found.group(1)) if found else default


def without_run(model: str) -> str:
    """The model name less its `#run<N>` suffix: the model a request asks for."""
    return _RUN_SUFFIX.sub("", model)


@functools.lru_cache(maxsize=4096)
def vary_answer(answer: str, user_turn: str, *, rate: float, seed: int = 0, run: int = 0) -> str:
    """`answer` (compact JSON text) as run `run` of vary seed `seed` gives it.

    Rate 0, or an answer without an `associations` array, comes back unchanged.
    Pure and cached: the server asks for the same chunk many times.
    """
    if rate <= 0:
        return answer
    try:
        out = json.loads(answer)
    except ValueError:
        return answer
    if not isinstance(out, dict) or not isinstance(out.get("associations"), list):
        return answer
    turn = hashlib.sha256(user_turn.encode("utf-8")).hexdigest()
    choose = _Chooser(f"{seed}\x1f{run}\x1f{turn}")
    paragraphs = sorted({block.paragraph for block in blocks_of(user_turn)})
    given = out["associations"]
    triples = {(a["subject"], a["label"], a["object"]) for a in given}
    varied: list[dict[str, Any]] = []
    for item in given:
        key = json.dumps(
            [item["subject"], item["label"], item["object"], item.get("paragraph")],
            ensure_ascii=False,
        )
        if choose.unit("pick", key) < rate:
            changed = _varied(item, key, choose, paragraphs)
            if changed is not None:
                varied.append(changed)
        else:
            varied.append(item)
        if choose.unit("extra", key) < rate * EXTRA_SHARE:
            extra = _reversed(item)
            triple = (extra["subject"], extra["label"], extra["object"])
            if triple not in triples:
                triples.add(triple)
                varied.append(extra)
    out["associations"] = varied
    named = {a["subject"] for a in varied} | {a["object"] for a in varied}
    out["aliases"] = [
        alias
        for alias in out.get("aliases") or []
        if alias.get("canonical") in named and alias.get("alias") not in named
    ]
    return json.dumps(out, ensure_ascii=False, separators=(",", ":"))


class _Chooser:
    """Hash-based choices under one (seed, run, prompt) prefix."""

    def __init__(self, prefix: str) -> None:
        self._prefix = prefix

    def _digest(self, what: str, key: str) -> int:
        text = f"{self._prefix}\x1f{what}\x1f{key}".encode()
        return int.from_bytes(hashlib.sha256(text).digest()[:8], "big")

    def unit(self, what: str, key: str) -> float:
        """A number in [0, 1), uniform over the hash."""
        return self._digest(what, key) / 2**64

    def index(self, what: str, key: str, count: int) -> int:
        return self._digest(what, key) % count


def _varied(
    item: dict[str, Any], key: str, choose: _Chooser, paragraphs: list[int]
) -> dict[str, Any] | None:
    """The association after its variation; None when it is dropped."""
    how = VARIATIONS[choose.index("how", key, len(VARIATIONS))]
    if how == "drop":
        return None
    changed = dict(item)
    if how == "paragraph":
        near = _neighbours(item.get("paragraph"), paragraphs)
        if near:
            changed["paragraph"] = near[choose.index("paragraph", key, len(near))]
            return changed
    if how == "label":
        spellings = _case_variants(item["label"])
        if spellings:
            changed["label"] = spellings[choose.index("label", key, len(spellings))]
            return changed
    factor = WEIGHT_FACTORS[choose.index("weight", key, len(WEIGHT_FACTORS))]
    changed["weight"] = float(item.get("weight", 1.0)) * factor
    return changed


def _neighbours(paragraph: object, paragraphs: list[int]) -> list[int]:
    """The paragraphs labelled just before and just after `paragraph` in the turn."""
    if paragraph not in paragraphs:
        return []
    at = paragraphs.index(paragraph)
    return [paragraphs[i] for i in (at - 1, at + 1) if 0 <= i < len(paragraphs)]


def _case_variants(label: str) -> list[str]:
    """Other spellings of `label` differing only in case, in a fixed order."""
    variants = (label.capitalize(), label.title(), label.upper())
    return [v for v in dict.fromkeys(variants) if v != label]


def _reversed(item: dict[str, Any]) -> dict[str, Any]:
    subject, obj = item["object"], item["subject"]
    extra: dict[str, Any] = {
        "subject": subject,
        "label": label_for(subject, obj),
        "object": obj,
        "weight": 1.0,
    }
    if "paragraph" in item:
        extra["paragraph"] = item["paragraph"]
    return extra
