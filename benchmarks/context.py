"""The embedded context at 10 000, 100 000 and 1 000 000 paragraphs (issues 19 and 42).

Generates deterministic source files (taguru-ray's own writer, the newest
header form, plus the import-only section and locator lines), imports each
corpus with `taguru-ray import FOLDER --store DIR` as a subprocess — the way a
user runs it — and times it; then opens the store and times a fixed set of
searches (limit 10, what `evaluate` sends) after one warm-up pass. The JSON
reports import throughput (paragraphs/s, files/s; gross, and net of a one-file
import's start-up), search latency p50/p90/p99 (nearest rank; wall clock, and
the searching thread's CPU time, which other work on a shared machine does not
inflate) and how each
grows from each corpus to the next ten times larger (large ÷ small, under
`growth`, keyed ``10000_to_100000`` …). Reported, never asserted
(benchmarks/README.md).

    python -m benchmarks.context [--paragraphs 10000 100000 1000000] [--per-file 10]
                                 [--rounds 3] [--results-dir DIR]
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.results_file import write_result
from taguru_ray.context.store import SqliteStore
from taguru_ray.contract.items import Alias, Association, Question
from taguru_ray.contract.source_file import Header, Passage, SourceFile, render_source_file

REPO = Path(__file__).resolve().parents[1]
RESULTS_DIR = REPO / "benchmarks" / "results"
CONTEXT_ID = "5b0d7f0e-6c1a-4d8e-9a51-2f3c4b5d6e7f"
CONTEXT = "bench"  # the header's create.name: the local context's name
SEARCH_LIMIT = 10
QUERY_COUNT = 40

# A made-up vocabulary: kanji compounds joined by kana particles (one alphanumeric run, so
# every adjacent pair is a bigram term) and ASCII words, both drawn Zipf-like so a few
# terms are common (long postings) and most are rare, as in prose.
_KANJI = (
    "酒造米麹水蔵元杜氏精白発酵貯蔵醸造吟醸火入新酒粕仕込冬季節気温湿度地域県町村山川"
    "谷港市場商人工房技術記録帳簿税制度運送船荷倉庫品質検査評価会議報告計画予算設備"
)
_PARTICLES = ("は", "の", "を", "に", "と", "で", "が", "から", "まで", "より")
_ONSETS = ("b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "tr")
_VOWELS = ("a", "e", "i", "o", "u", "ai", "ou")
_LABELS = ("所在地", "原料", "工程", "関連", "使用", "含む", "作る", "uses", "feeds", "part of")
_WEIGHTS = (0.1, 0.3, 0.7, 0.9, 1.0)  # not all sums of powers of two: float sums drift
_VOCABULARY_SEED = "taguru-ray-context-bench"


def _vocabulary() -> tuple[list[str], list[str], list[float]]:
    rng = random.Random(_VOCABULARY_SEED)
    kanji = sorted({"".join(rng.sample(_KANJI, rng.randint(2, 4))) for _ in range(3000)})
    rng.shuffle(kanji)
    words: set[str] = set()
    while len(words) < 2000:
        words.add("".join(rng.choice(_ONSETS) + rng.choice(_VOWELS)
                          for _ in range(rng.randint(2, 3))))  # fmt: skip
    english = sorted(words)
    rng.shuffle(english)
    return kanji, english, [1.0 / rank for rank in range(1, 3001)]


_KANJI_WORDS, _ENGLISH_WORDS, _ZIPF = _vocabulary()
CONCEPTS = _KANJI_WORDS[:400]  # the names associations are drawn from


def paragraph_text(rng: random.Random) -> str:
    """About 60 characters of Japanese and 8 English words."""
    kanji = rng.choices(_KANJI_WORDS, _ZIPF[: len(_KANJI_WORDS)], k=12)
    english = rng.choices(_ENGLISH_WORDS, _ZIPF[: len(_ENGLISH_WORDS)], k=8)
    japanese = "".join(word + rng.choice(_PARTICLES) for word in kanji[:-1]) + kanji[-1] + "。"
    return f"{japanese} {' '.join(english)}."


def source_name(index: int) -> str:
    return f"doc-{index:06d}.md"


def source_file_bytes(index: int, paragraphs: int, concepts: int = len(CONCEPTS)) -> bytes:
    """Source file `index`: a passage of `paragraphs` paragraphs with two questions, three
    sourced associations among the first `concepts` names (few names: edges gather many
    sources), one alias whose spelling always names the same canonical, two section
    markers and one locator. Seeded by the index alone: file 17 has the same bytes in
    every corpus of the same `concepts`."""
    rng = random.Random(f"{_VOCABULARY_SEED}:{index}")
    texts = [paragraph_text(rng) for _ in range(paragraphs)]
    questions = [Question(p, f"{rng.choice(_KANJI_WORDS)}はどこですか?")
                 for p in sorted(rng.sample(range(paragraphs), min(2, paragraphs)))]  # fmt: skip
    names = rng.sample(range(concepts), 4)
    associations = [
        Association(CONCEPTS[a], rng.choice(_LABELS), CONCEPTS[b], rng.choice(_WEIGHTS),
                    rng.randrange(paragraphs))
        for a, b in ((names[0], names[1]), (names[1], names[2]), (names[0], names[3]))
    ]  # fmt: skip
    aliases = [Alias(f"略{names[0]:03d}", CONCEPTS[names[0]], "concept")]
    body = render_source_file(
        SourceFile(
            Header(source_name(index), CONTEXT_ID, CONTEXT, f"context benchmark {index}"),
            Passage("\n\n".join(texts), tags=(f"t{index % 7}",)),
            questions,
            associations,
            aliases,
        )
    )
    extra = [
        {"paragraph": 0, "section": "序"},
        {"paragraph": paragraphs // 2, "section": f"第{index % 9 + 1}章"},
        {"paragraph": paragraphs - 1, "locator": {"kind": "page", "value": str(index + 1)}},
    ]
    return body + "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in extra).encode()


def write_source_files(
    folder: Path, files: int, paragraphs: int, concepts: int = len(CONCEPTS)
) -> list[Path]:
    """Files 0 .. files-1 into `folder` (created), named so name order is index order."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for index in range(files):
        path = folder / f"{source_name(index)}.jsonl"
        path.write_bytes(source_file_bytes(index, paragraphs, concepts))
        paths.append(path)
    return paths


def queries() -> list[str]:
    """A fixed mix: common and rare kanji words, English words, two-word queries and a
    question-shaped one."""
    rng = random.Random(f"{_VOCABULARY_SEED}:queries")
    found = []
    for number in range(QUERY_COUNT):
        kind = number % 4
        if kind == 0:
            found.append(rng.choice(_KANJI_WORDS[:30]))  # common
        elif kind == 1:
            found.append(rng.choice(_KANJI_WORDS[500:]))  # rare
        elif kind == 2:
            found.append(f"{rng.choice(_ENGLISH_WORDS[:50])} {rng.choice(_ENGLISH_WORDS)}")
        else:
            found.append(f"{rng.choice(_KANJI_WORDS[:200])}はどこですか")
    return found


def nearest_rank(values: list[float], percent: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(percent / 100 * len(ordered)) - 1)]


def _import(folder: Path, store: Path) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TAGURU_")}
    began = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "taguru_ray", "import", str(folder), "--store", str(store)],
        env={**env, "PYTHONPATH": str(REPO)}, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True, cwd=REPO,
    )  # fmt: skip
    seconds = time.monotonic() - began
    if done.returncode != 0:
        raise SystemExit(f"taguru-ray import failed ({done.returncode}): {done.stderr[-2000:]}")
    return seconds


def _searches(store_dir: Path, rounds: int) -> dict[str, Any]:
    store = SqliteStore(store_dir, create=False)
    texts = queries()
    hits = [len(store.search(CONTEXT, q, limit=SEARCH_LIMIT)["hits"]) for q in texts]  # warm
    latencies, cpu = [], []
    for _ in range(rounds):
        for query in texts:
            began, began_cpu = time.perf_counter(), time.thread_time()
            store.search(CONTEXT, query, limit=SEARCH_LIMIT)
            latencies.append((time.perf_counter() - began) * 1000)
            cpu.append((time.thread_time() - began_cpu) * 1000)
    store.close()
    return {
        "queries": len(texts),
        "rounds": rounds,
        "searches": len(latencies),
        "limit": SEARCH_LIMIT,
        "queries_with_hits": sum(1 for n in hits if n),
        "p50_ms": round(nearest_rank(latencies, 50), 3),
        "p90_ms": round(nearest_rank(latencies, 90), 3),
        "p99_ms": round(nearest_rank(latencies, 99), 3),
        "max_ms": round(max(latencies), 3),
        # The searching thread's own CPU time: what the search costs, without the time
        # it waited for a core while other work ran on this shared machine.
        "cpu_p50_ms": round(nearest_rank(cpu, 50), 3),
        "cpu_p90_ms": round(nearest_rank(cpu, 90), 3),
        "cpu_p99_ms": round(nearest_rank(cpu, 99), 3),
    }


def _store_facts(store_dir: Path) -> dict[str, Any]:
    conn = sqlite3.connect(f"file:{store_dir / 'taguru-context.sqlite3'}?mode=ro", uri=True)
    try:
        row = conn.execute("SELECT paragraphs, paragraph_length FROM contexts").fetchone()
        postings, terms, rows = conn.execute(
            "SELECT sum(count), count(DISTINCT term), count(*) FROM term_windows"
        ).fetchone()
    finally:
        conn.close()
    size = sum(p.stat().st_size for p in store_dir.iterdir() if p.is_file())
    return {"paragraphs": row[0], "terms_total": row[1], "postings": postings,
            "distinct_terms": terms, "posting_rows": rows, "store_bytes": size}  # fmt: skip


def measure(
    work: Path, paragraphs: int, per_file: int, rounds: int, floor: float
) -> dict[str, Any]:
    files = math.ceil(paragraphs / per_file)
    folder, store = work / f"files-{paragraphs}", work / f"store-{paragraphs}"
    written = write_source_files(folder, files, per_file)
    source_bytes = sum(path.stat().st_size for path in written)
    seconds = _import(folder, store)
    net = max(seconds - floor, 1e-9)
    facts = _store_facts(store)
    return {
        "files": files,
        "paragraphs_per_file": per_file,
        "source_bytes": source_bytes,
        "import": {
            "seconds": round(seconds, 3),
            "paragraphs_per_second": round(facts["paragraphs"] / seconds, 1),
            "files_per_second": round(files / seconds, 1),
            "net_seconds": round(net, 3),
            "net_paragraphs_per_second": round(facts["paragraphs"] / net, 1),
            "net_files_per_second": round(files / net, 1),
        },
        "store": facts,
        "search": _searches(store, rounds),
    }


def growth(small: dict[str, Any], large: dict[str, Any]) -> dict[str, Any]:
    """large ÷ small for every rate and latency, with the size ratio it is read against."""

    def ratio(section: str, key: str) -> float:
        return round(large[section][key] / small[section][key], 3)

    return {
        "paragraphs": ratio("store", "paragraphs"),
        "import_paragraphs_per_second": ratio("import", "paragraphs_per_second"),
        "import_net_paragraphs_per_second": ratio("import", "net_paragraphs_per_second"),
        "import_files_per_second": ratio("import", "files_per_second"),
        "search_p50": ratio("search", "p50_ms"),
        "search_p90": ratio("search", "p90_ms"),
        "search_p99": ratio("search", "p99_ms"),
        "search_cpu_p50": ratio("search", "cpu_p50_ms"),
        "search_cpu_p90": ratio("search", "cpu_p90_ms"),
        "search_cpu_p99": ratio("search", "cpu_p99_ms"),
        "store_bytes": ratio("store", "store_bytes"),
    }


def run(sizes: list[int], per_file: int, rounds: int, work: Path) -> dict[str, Any]:
    # The floor: one file's import, i.e. the interpreter, imports and store creation.
    one = work / "one"
    write_source_files(one, 1, per_file)
    floor = min(_import(one, work / f"store-one-{n}") for n in range(2))
    corpora = {}
    for n in sizes:  # each corpus's files and store go once measured: a million is ~1 GB
        corpora[str(n)] = measure(work, n, per_file, rounds, floor)
        shutil.rmtree(work / f"files-{n}")
        shutil.rmtree(work / f"store-{n}")
    result: dict[str, Any] = {"import_floor_seconds": round(floor, 3), "corpora": corpora}
    result["growth"] = {
        f"{small}_to_{large}": growth(corpora[str(small)], corpora[str(large)])
        for small, large in itertools.pairwise(sizes)
    }
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.context", description=__doc__)
    parser.add_argument("--paragraphs", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--per-file", type=int, default=10, help="paragraphs per source file")
    parser.add_argument("--rounds", type=int, default=3, help="timed passes over the queries")
    parser.add_argument("--results-dir", type=Path, default=RESULTS_DIR)
    args = parser.parse_args(argv)
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="taguru-ray-context-bench-") as work:
        result = run(sorted(args.paragraphs), args.per_file, args.rounds, Path(work))
    result["wall_seconds"] = round(time.monotonic() - began, 1)
    result["machine"] = {"cpus": os.cpu_count(), "python": sys.version.split()[0],
                         "sqlite": sqlite3.sqlite_version}  # fmt: skip
    text = write_result(args.results_dir, "context", result)
    print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
