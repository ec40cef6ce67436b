"""The session index at 100 000 turns (issue 21 §2: "fast on 100 000 turns").

Writes a few hundred deterministic sessions as OpenAI chat logs (JSON Lines: user,
assistant, tool-call and tool-result messages of mixed Japanese and English, with
file names, commands and hex ids so the vocabulary keeps growing as prose does),
then imports the folder with `taguru-ray sessions import FOLDER --store DIR` as a
subprocess — the way a user runs it: secret scan, conversion and the store — and
again, every file unchanged. In this process it times the import's halves apart
(convert every file, then `SessionStore.put` them into a second store), and on the
imported store: `sessions()`, searches (median of several rounds after a warm-up:
a planted Japanese phrase, a planted English phrase, a common Japanese phrase, and
two two-character words, which fall back to a LIKE scan: one found, one absent so
the scan reads every turn) and `show` of a turn with 5 turns either side at random
handles; then `taguru-ray sessions search` as a subprocess (interpreter start
included). Reported, never asserted (benchmarks/README.md).

    python -m benchmarks.sessions [--turns 100000] [--sessions 300] [--rounds 7]
                                  [--results-dir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.results_file import write_result
from taguru_ray.sessions.convert import convert
from taguru_ray.sessions.index import SessionStore
from taguru_ray.sessions.index_records import turn_handle

REPO = Path(__file__).resolve().parents[1]
RESULTS_DIR = REPO / "benchmarks" / "results"
SEED = "taguru-ray-sessions-bench"
SEARCH_LIMIT = 20
SHOW_CONTEXT = 5

# Planted once in about every PLANT_EVERY turns, so a rare phrase has a few hundred hits.
JAPANESE = "ラズベリーパイ側が起動しない"
ENGLISH = "build-release.sh"
PLANT_EVERY = 400
QUERIES = {
    "japanese_phrase": JAPANESE,
    "english_phrase": ENGLISH,
    "japanese_common": "を確認しました",
    "two_characters": "起動",  # LIMIT stops the scan at the 20th hit
    "two_characters_absent": "鯖缶",  # no hit: the scan reads every turn
}

_NOUNS = (
    "設定ファイル", "デプロイ", "テスト", "ログ", "依存関係", "ビルド", "キャッシュ", "認証",
    "データベース", "マイグレーション", "環境変数", "ブランチ", "差分", "型定義", "例外処理",
    "非同期処理", "設計書", "レビュー", "性能", "メモリ", "接続", "タイムアウト", "再試行",
)  # fmt: skip
_VERBS = ("修正", "追加", "削除", "確認", "更新", "調査", "整理", "変更", "実装", "検証")
_ENDINGS = ("しました。", "してください。", "が必要です。", "はまだです。", "を確認しました。")
_WORDS = (
    "the", "test", "fails", "because", "config", "is", "missing", "retry", "after", "timeout",
    "import", "module", "error", "path", "fixed", "now", "passes", "on", "main", "branch",
    "deploy", "script", "cache", "token", "build", "server", "client", "worker", "queue",
)  # fmt: skip
_COMMANDS = ("pytest -q", "ruff check", "git diff", "make test", "npm run build", "ls -la")


def _sentence(rng: random.Random) -> str:
    if rng.random() < 0.55:
        first, second = rng.choice(_NOUNS), rng.choice(_NOUNS)
        return f"{first}の{second}を{rng.choice(_VERBS)}{rng.choice(_ENDINGS)}"
    words = rng.choices(_WORDS, k=rng.randint(5, 12))
    return " ".join(words).capitalize() + f" (src/{rng.choice(_WORDS)}_{rng.randrange(999)}.py)."


def _text(rng: random.Random, sentences: int, seq: int) -> str:
    parts = [_sentence(rng) for _ in range(sentences)]
    if seq % PLANT_EVERY == 7:
        parts.insert(rng.randrange(len(parts) + 1), f"{JAPANESE}ので確認します。")
    if seq % PLANT_EVERY == 211:
        parts.insert(rng.randrange(len(parts) + 1), f"Renamed deploy.sh to {ENGLISH}.")
    return " ".join(parts)


def chat_file(index: int, turns: int, first_seq: int) -> bytes:
    """Session `index` as an OpenAI chat log (JSON Lines) of `turns` messages: user,
    assistant, a tool call, its result, in turn. `first_seq` (its first turn's number
    in the corpus) places the planted phrases, so the corpus holds the same turns
    however it is cut."""
    rng = random.Random(f"{SEED}:{index}")
    lines = []
    for seq in range(turns):
        at, role = first_seq + seq, seq % 4
        call_id = f"call_{index}_{seq - seq % 4 + 2}"
        if role == 0:
            message: dict[str, Any] = {"role": "user", "content": _text(rng, 2, at)}
        elif role == 1:
            message = {"role": "assistant", "content": _text(rng, rng.randint(2, 8), at)}
        elif role == 2:
            command = f"{rng.choice(_COMMANDS)} {rng.getrandbits(32):08x}"
            function = {"name": "bash", "arguments": json.dumps({"command": command})}
            call = {"id": call_id, "type": "function", "function": function}
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
        else:
            text = "\n".join(_sentence(rng) for _ in range(rng.randint(2, 16)))
            message = {"role": "tool", "tool_call_id": call_id, "content": text}
        lines.append(json.dumps(message, ensure_ascii=False))
    return ("\n".join(lines) + "\n").encode()


def write_corpus(folder: Path, turns: int, sessions: int) -> list[Path]:
    """`sessions` files of about turns/sessions turns each (±50 %), `turns` in all."""
    rng = random.Random(SEED)
    weights = [rng.uniform(0.5, 1.5) for _ in range(sessions)]
    sizes = [max(1, int(turns * w / sum(weights))) for w in weights]
    sizes[-1] += turns - sum(sizes)
    folder.mkdir(parents=True, exist_ok=True)
    paths, first = [], 0
    for index, size in enumerate(sizes):
        path = folder / f"chat-{index:04d}.jsonl"
        path.write_bytes(chat_file(index, size, first))
        paths.append(path)
        first += size
    return paths


def _median_ms(call: Callable[[], object], rounds: int) -> tuple[float, list[float]]:
    call()  # warm-up
    times = []
    for _ in range(rounds):
        began = time.perf_counter()
        call()
        times.append((time.perf_counter() - began) * 1000)
    return round(statistics.median(times), 3), [round(t, 3) for t in times]


def _cli(*argv: str) -> float:
    """Seconds `taguru-ray ARGV…` took as a subprocess (exit 0 required)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    began = time.perf_counter()
    subprocess.run([sys.executable, "-m", "taguru_ray", *argv], env=env, cwd=REPO,
                   check=True, stdout=subprocess.DEVNULL)  # fmt: skip
    return time.perf_counter() - began


def _in_process(paths: list[Path], folder: Path) -> dict[str, Any]:
    """Import's two halves apart, in this process: convert every file, then put them."""
    began = time.perf_counter()
    sessions = [convert(path.read_bytes(), file=str(path)) for path in paths]
    converted = time.perf_counter() - began
    with SessionStore(folder, create=True) as store:
        began = time.perf_counter()
        for session in sessions:
            store.put(session)
        put = time.perf_counter() - began
    return {"convert_seconds": round(converted, 2), "put_seconds": round(put, 2)}


def run(turns: int, sessions: int, rounds: int, work: Path) -> dict[str, Any]:
    began = time.perf_counter()
    paths = write_corpus(work / "files", turns, sessions)
    generated = time.perf_counter() - began
    folder = work / "store"
    imported = _cli("sessions", "import", str(work / "files"), "--store", str(folder))
    again = _cli("sessions", "import", str(work / "files"), "--store", str(folder))
    halves = _in_process(paths, work / "store-in-process")
    store = SessionStore(folder)
    rows = store.sessions()
    stored = sum(row.turns for row in rows)
    listed_ms, _ = _median_ms(store.sessions, rounds)
    searches: dict[str, Any] = {}
    for name, query in QUERIES.items():
        median, times = _median_ms(lambda q=query: store.search(q, limit=SEARCH_LIMIT), rounds)
        hits = len(store.search(query, limit=1_000_000))
        searches[name] = {"query": query, "median_ms": median, "runs_ms": times,
                          "matching_turns": hits}  # fmt: skip
    picks = random.Random(SEED).sample(rows, min(20, len(rows)))
    handles = [turn_handle(row.agent, row.session_id, row.turns // 2) for row in picks]
    show_ms, _ = _median_ms(lambda: [store.show(h, context=SHOW_CONTEXT) for h in handles], rounds)
    text_chars = store._conn.execute("SELECT sum(length(text)) FROM events").fetchone()[0]
    store.close()
    cli_search = [_cli("sessions", "search", JAPANESE, "--store", str(folder)) for _ in range(3)]
    return {
        "turns": stored,
        "sessions": len(rows),
        "text_chars": text_chars,
        "file_bytes": sum(path.stat().st_size for path in paths),
        "generate_seconds": round(generated, 2),
        "import": {
            "seconds": round(imported, 2),
            "turns_per_second": round(stored / imported, 1),
            "reimport_unchanged_seconds": round(again, 2),
            **halves,
            "note": "taguru-ray sessions import FOLDER as a subprocess (interpreter start "
            "included); convert and put timed apart in-process",
        },
        "store_bytes": sum(p.stat().st_size for p in folder.iterdir() if p.is_file()),
        "list_ms": listed_ms,
        "search": {"limit": SEARCH_LIMIT, "rounds": rounds, **searches},
        "show": {
            "context": SHOW_CONTEXT,
            "handles": len(handles),
            "median_ms_per_show": round(show_ms / len(handles), 3),
        },
        "cli_search_ms": {
            "query": JAPANESE,
            "median_ms": round(statistics.median(cli_search) * 1000, 1),
            "note": "taguru-ray sessions search as a subprocess, interpreter start included",
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.sessions", description=__doc__)
    parser.add_argument("--turns", type=int, default=100_000)
    parser.add_argument("--sessions", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=7, help="timed runs of each measurement")
    parser.add_argument("--results-dir", type=Path, default=RESULTS_DIR)
    args = parser.parse_args(argv)
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="taguru-ray-sessions-bench-") as work:
        result = run(args.turns, args.sessions, args.rounds, Path(work))
    result["wall_seconds"] = round(time.monotonic() - began, 1)
    result["machine"] = {"cpus": os.cpu_count(), "python": sys.version.split()[0],
                         "sqlite": sqlite3.sqlite_version}  # fmt: skip
    text = write_result(args.results_dir, "sessions", result)
    print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
