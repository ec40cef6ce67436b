"""Tables the record tools print and store: one shape for the terminal and for Parquet.

A `Table` is a name (the Parquet file's stem), a title, typed columns and
rows of plain values. The terminal rendering right-aligns numbers, prints
floats with their column's decimals (three unless said) and a missing value
as ``-``, and leaves out an ``optional`` column whose every value is missing
or zero (an attempt state or a ladder move the run never had) and a
``hidden`` one (a key the row names already carry). The Parquet rendering
keeps every column, typed, so a notebook reads the same schema from every run;
`to_arrow` is that typed form, for Parquet and for the Python API's readers alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import pyarrow as pa

# "num": a float column whose whole values print as integers (a count beside a rate);
# "ref": an attempt reference {run_id, attempt_seq}; "strs": a list of strings.
Kind = Literal["str", "int", "float", "num", "bool", "ref", "strs"]


@dataclass(frozen=True)
class Column:
    name: str
    kind: Kind
    optional: bool = False  # may be left out of the terminal view when empty
    digits: int = 3  # a float's decimals on the terminal
    hidden: bool = False  # Parquet only (a key the terminal's row names already carry)


@dataclass
class Table:
    name: str
    title: str
    columns: list[Column]
    rows: list[dict[str, Any]] = field(default_factory=list)

    def column(self, name: str) -> list[Any]:
        return [row.get(name) for row in self.rows]


def render(table: Table) -> str:
    """The table for a terminal: title, header, aligned rows."""
    shown = [column for column in table.columns if not column.hidden and _shown(table, column)]
    cells = [[column.name for column in shown]]
    cells += [[_cell(row.get(column.name), column) for column in shown] for row in table.rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(shown))]
    lines = [table.title]
    for line in cells:
        parts = [
            text.ljust(width) if column.kind == "str" else text.rjust(width)
            for text, width, column in zip(line, widths, shown, strict=True)
        ]
        lines.append("  " + "  ".join(parts).rstrip())
    if not table.rows:
        lines.append("  (none)")
    return "\n".join(lines) + "\n"


def render_all(tables: Sequence[Table]) -> str:
    return "\n".join(render(table) for table in tables)


def write_parquet(tables: Sequence[Table], folder: str) -> list[str]:
    """One ``<folder>/<table name>.parquet`` per table (any fsspec URL); returns the paths."""
    import fsspec
    import pyarrow.parquet as pq

    fs, root = fsspec.core.url_to_fs(folder)
    fs.makedirs(root, exist_ok=True)
    written = []
    for table in tables:
        path = f"{root.rstrip('/')}/{table.name}.parquet"
        with fs.open(path, "wb") as handle:
            pq.write_table(to_arrow(table), handle)
        written.append(f"{folder.rstrip('/')}/{table.name}.parquet")
    return written


def to_arrow(table: Table) -> pa.Table:
    """The table as Arrow: every column (hidden and optional ones too), typed by its kind,
    a missing value null."""
    import pyarrow as pa

    ref = pa.struct([("run_id", pa.string()), ("attempt_seq", pa.int64())])
    types = {
        "str": pa.string(),
        "int": pa.int64(),
        "float": pa.float64(),
        "num": pa.float64(),
        "bool": pa.bool_(),
        "ref": ref,
        "strs": pa.list_(pa.string()),
    }
    schema = pa.schema([(column.name, types[column.kind]) for column in table.columns])
    data = {column.name: _values(table, column) for column in table.columns}
    return pa.table(data, schema=schema)


def _values(table: Table, column: Column) -> list[Any]:
    values = table.column(column.name)
    if column.kind == "num":
        return [None if value is None else float(value) for value in values]
    return values


def _shown(table: Table, column: Column) -> bool:
    return not column.optional or any(value not in (None, 0) for value in table.column(column.name))


def _cell(value: Any, column: Column) -> str:
    if value is None:
        return "-"
    if column.kind == "num" and isinstance(value, int):
        return str(value)
    if column.kind in ("float", "num"):
        return f"{value:.{column.digits}f}"
    if column.kind == "bool":
        return "yes" if value else "no"
    return str(value)
