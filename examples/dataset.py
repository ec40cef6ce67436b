"""Write the sample datasets README's "What a corpus can be" runs: the sample corpus's
paragraphs as rows, ids ``<file stem>-<n>``.

    .venv/bin/python examples/dataset.py   # dataset/part-{0,1}.parquet, rows.jsonl.gz

Two Parquet shards (columns ``doc`` and ``body``) and one gzipped JSONL file (keys
``id`` and ``text``), committed beside this script; run it again to rebuild them.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).parent


def rows() -> list[dict[str, str]]:
    found = []
    for path in sorted((HERE / "corpus").glob("*.md")):
        paragraphs = [p for p in path.read_text(encoding="utf-8").split("\n\n") if p.strip()]
        found += [{"id": f"{path.stem}-{n}", "text": p + "\n"} for n, p in enumerate(paragraphs)]
    return found


def main() -> None:
    every = rows()
    (HERE / "dataset").mkdir(exist_ok=True)
    half = len(every) // 2
    for shard, part in enumerate((every[:half], every[half:])):
        table = pa.table({"doc": [r["id"] for r in part], "body": [r["text"] for r in part]})
        pq.write_table(table, HERE / "dataset" / f"part-{shard}.parquet")
    lines = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in every[:6])
    (HERE / "rows.jsonl.gz").write_bytes(gzip.compress(lines.encode("utf-8"), mtime=0))


if __name__ == "__main__":
    main()
