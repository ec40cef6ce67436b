"""Deterministic benchmark corpora: N small Markdown segments of about S bytes.

Every segment is a heading plus short paragraphs that chain made-up proper
names ("Varo Kestrel depends on Lumi Tessaro."). The names are drawn per
segment from a seeded generator, so the simulator's rule-based answers are
non-trivial (several associations per paragraph, every name distinct from the
other segments') and byte-identical from one run to the next. File names are
zero-padded so name order, which is the run's segment order, is index order.

    python -m benchmarks.corpus OUT_DIR --segments 2000 --bytes 1024
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

# Syllables that never spell an English stopword, so every capitalised word
# the generator writes is read as a name by the simulator.
_ONSETS = ("b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "kr", "tr")
_VOWELS = ("a", "e", "i", "o", "u", "ai", "ei", "ou")
_CODAS = ("", "", "n", "r", "s", "l", "x")
_VERBS = ("depends on", "feeds", "is part of", "reports to", "replaces", "talks to", "uses")
_FILLER = (
    "during the night shift",
    "according to the maintenance log",
    "after the spring audit",
    "when the queue is long",
    "in the northern hall",
    "for the quarterly review",
)


def _word(rng: random.Random) -> str:
    syllables = rng.randint(2, 3)
    text = "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) for _ in range(syllables))
    return (text + rng.choice(_CODAS)).capitalize()


def _name(rng: random.Random) -> str:
    # Two capitalised words: the simulator joins them into one name.
    return f"{_word(rng)} {_word(rng)}"


def segment_text(index: int, size_bytes: int, seed: int = 0) -> str:
    """The Markdown of segment `index`: at least `size_bytes` UTF-8 bytes (ASCII only).

    Seeded by (seed, index) alone, so segment 17 is the same text in a corpus
    of 20 and in one of 100 000.
    """
    rng = random.Random(f"taguru-ray-bench:{seed}:{index}")
    names = [_name(rng) for _ in range(6)]
    # A heading with no name in it: an item tagged to a heading paragraph would
    # be removed, and the benchmark wants every answer to pass untouched.
    parts = [f"# field notes, entry {index:06d}"]
    size = len(parts[0]) + 1
    while size < size_bytes:
        a, b, c = rng.sample(names, 3)
        paragraph = (
            f"{a} {rng.choice(_VERBS)} {b} {rng.choice(_FILLER)}. "
            f"{b} {rng.choice(_VERBS)} {c}, and {c} {rng.choice(_VERBS)} {a}."
        )
        parts.append(paragraph)
        size += len(paragraph) + 2
    return "\n\n".join(parts) + "\n"


def segment_name(index: int) -> str:
    return f"seg-{index:06d}.md"


def write_corpus(folder: Path, segments: int, size_bytes: int, seed: int = 0) -> list[Path]:
    """Write segments 0 .. segments-1 into `folder` (created); returns the paths in order.

    Files already holding the right bytes are left alone, so a corpus shared
    by several measurements is written once.
    """
    folder.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    for index in range(segments):
        path = folder / segment_name(index)
        data = segment_text(index, size_bytes, seed).encode("utf-8")
        if not path.exists() or path.read_bytes() != data:
            path.write_bytes(data)
        paths.append(path)
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--segments", type=int, default=2000)
    parser.add_argument("--bytes", type=int, default=1024, dest="size_bytes")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    write_corpus(args.folder, args.segments, args.size_bytes, args.seed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
