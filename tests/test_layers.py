"""Layers import downwards only (docs/ARCHITECTURE.md): a pure core under an effectful
shell, each verb on the layers below it. An import that runs up fails here."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "taguru_ray"

# Rank by top-level module or package; a module may import only its own rank or lower.
RANKS = {
    "errors": 0,
    "heap": 0,
    "text": 0,
    "documents": 0,  # PDF/DOCX/PPTX/HTML bytes in, paragraphs with locators out (ADR 0078)
    "contract": 0,
    "sqlite_wal": 0,  # how the two SQLite stores open their files
    "measure": 0,  # Distribution / Ratio / Count, shared by benchmark and evaluate
    "cpu": 0,  # CPU readings of a process and its host (the pacing part, ADR 0048)
    "pricing": 0,  # the price table, tariffs and budgets: pure
    "evalset": 1,  # eval.jsonl, shared by evaluate and benchmark search
    "remote": 2,  # the client of any Taguru server
    "pipeline": 1,
    "settings": 3,  # resolving flags, variables and --config (declarations: contract/settings)
    "llm": 2,
    "store": 2,
    "gateway": 3,
    "engine": 4,
    "tools": 5,
    "simulate": 5,
    "evaluate": 4,  # the retrieval gate: remote, evalset, measure; no extract, no LLM
    "benchmark": 5,  # benchmark extract runs extract as a child; compare is pure
    "context": 3,  # the embedded Taguru context: store, import, search semantics
    "serve": 5,  # its HTTP server
    "report": 5,  # the report page: reads with tools/ and benchmark/compare, draws SVG
    "sessions": 1,  # agent sessions: converters, index, the extraction program (pure + sqlite)
    "cli": 6,
    "api": 6,  # the Python API: extract() -> RunResult, over the engine
    "api_settings": 6,  # its keyword settings for type checkers, rendered from contract/settings
    "readers": 6,  # the Python API's record readers: inspect(), metrics() as Arrow
    "data": 6,  # the Python API over a Ray Dataset of {path, text} rows
    "__main__": 7,
    "__init__": 7,
}
# Within one rank, these pairs must not meet either.
# The Python API builds on the settings' declarations, never on the CLI's parser (the CLI
# may call the API).
APART = {("llm", "store"), ("store", "llm"), ("api", "cli")}


def imports(path: Path) -> set[str]:
    """The taguru_ray top-level names a module imports (nested imports included)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            parts = node.module.split(".")
            if parts[0] == "taguru_ray":
                found |= {parts[1]} if len(parts) > 1 else {alias.name for alias in node.names}
        elif isinstance(node, ast.Import):
            found |= {
                alias.name.split(".")[1]
                for alias in node.names
                if alias.name.startswith("taguru_ray.")
            }
    return found


def test_every_import_runs_down_the_layers() -> None:
    upward = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).parts
        owner = parts[0].removesuffix(".py")
        assert owner in RANKS, f"{path}: give {owner!r} a rank in RANKS"
        for name in imports(path) - {owner, "__version__"}:
            if name not in RANKS:
                continue
            if RANKS[name] > RANKS[owner] or (owner, name) in APART:
                upward.append(f"{path.relative_to(PACKAGE.parent)}: {owner} imports {name}")
    assert upward == []


def test_a_module_over_400_lines_says_why_in_its_docstring() -> None:
    unexplained = []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if text.count("\n") > 400:
            doc = ast.get_docstring(ast.parse(text)) or ""
            if "over 400 lines" not in doc:
                unexplained.append(str(path.relative_to(PACKAGE.parent)))
    assert unexplained == []


ROOT = PACKAGE.parent
# The import graph the circle test walks: the package and the bench scripts beside it.
GRAPHED = ("taguru_ray", "benchmarks")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_imports(path: Path, name: str, known: set[str]) -> set[str]:
    """The graphed modules `path` imports: nested and type-checking imports included (a
    circle the type checker walks is a circle all the same), each the longest known
    module its dotted name reaches."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    wanted: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package
                for _ in range(node.level - 1):
                    anchor = anchor.rpartition(".")[0]
                base = f"{anchor}.{base}" if node.module else anchor
            # `from package import module` imports the module; `from module import name`
            # the module (a package's own __init__ is not an edge of its modules).
            wanted += [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                for alias in node.names
            ]
        elif isinstance(node, ast.Import):
            wanted += [alias.name for alias in node.names]
    found: set[str] = set()
    for target in wanted:
        while target and target not in known:
            target = target.rpartition(".")[0]
        if target and target != name:
            found.add(target)
    return found


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The graph's strongly connected components of two modules or more (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(start: str) -> None:  # iterative: no recursion limit on deep chains
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        while work:
            node, edges = work[-1]
            for edge in edges:
                if edge not in index:
                    index[edge] = low[edge] = len(index)
                    stack.append(edge)
                    work.append((edge, iter(sorted(graph[edge]))))
                    break
                if edge in stack:
                    low[node] = min(low[node], index[edge])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_two_modules_import_each_other_even_through_others() -> None:
    # Issue 51: four circles were cut by moving what both sides needed into a lower
    # module of its own (context/errors.py, context/evidence_request.py, simulate/names.py,
    # benchmarks/process_runs.py; the settings' forms are named by their declarations).
    paths = {module_name(p): p for top in GRAPHED for p in (ROOT / top).rglob("*.py")}
    known = set(paths)
    graph = {name: module_imports(path, name, known) for name, path in paths.items()}
    assert circles(graph) == []


def test_the_circle_finder_finds_a_circle_through_a_third_module() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert circles(graph) == [["a", "b", "c"]]
