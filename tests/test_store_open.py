"""A --store that cannot be a store — a file, a file that is no SQLite database, a read-only
store — is one line naming the store and the fix, for the context store (`import`, `search`)
and the session index (`sessions import | list | search`); never a traceback (issue 37)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from taguru_ray.cli import main
from taguru_ray.context.schema import FILE_NAME as CONTEXT_FILE
from taguru_ray.sessions.index_schema import FILE_NAME as SESSIONS_FILE
from tests.permissions import needs_permissions

FIXTURES = Path(__file__).parent / "fixtures"
SOURCE = str(next((FIXTURES / "records" / "run-a").glob("*.jsonl")))
SESSION = str(FIXTURES / "sessions" / "codex")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().err


def one_line(err: str, *names: str) -> None:
    assert len(err.splitlines()) == 1, err
    assert "Traceback" not in err and "this is a bug" not in err, err
    for name in names:
        assert name in err, err


VERBS = {
    "import": ["import", SOURCE, "--store"],
    "search": ["search", "alpha", "--store"],
    "sessions import": ["sessions", "import", SESSION, "--store"],
    "sessions list": ["sessions", "list", "--store"],
    "sessions search": ["sessions", "search", "deploy", "--store"],
}
CREATES = {"import", "sessions import"}  # these make a store where there is none


@pytest.mark.parametrize("verb", sorted(CREATES))
def test_a_store_that_is_a_file_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, verb: str
) -> None:
    store = tmp_path / "store"
    store.write_text("not a folder\n")
    code, err = run(capsys, *VERBS[verb], str(store))
    assert code == 2
    one_line(err, f"--store {store}: a file, not a folder")


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_a_store_file_that_is_no_database_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, verb: str
) -> None:
    store = tmp_path / "store"
    store.mkdir()
    name = SESSIONS_FILE if verb.startswith("sessions") else CONTEXT_FILE
    (store / name).write_bytes(b"garbage, not SQLite\n" * 10)
    code, err = run(capsys, *VERBS[verb], str(store))
    assert code == 2
    one_line(err, f"--store {store}: {name} is not a", "give another --store")
    assert (store / name).read_bytes() == b"garbage, not SQLite\n" * 10  # left as it was


@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[dict[str, Path]]:
    stores = {"context": tmp_path / "context", "sessions": tmp_path / "sessions"}
    assert main(["import", SOURCE, "--store", str(stores["context"])]) == 0
    assert main(["sessions", "import", SESSION, "--store", str(stores["sessions"])]) == 0
    for folder in stores.values():
        for path in [*folder.iterdir(), folder]:
            path.chmod(0o555 if path.is_dir() else 0o444)
    yield stores
    for folder in stores.values():
        folder.chmod(0o755)
        for path in folder.iterdir():
            path.chmod(0o644)


@needs_permissions
@pytest.mark.parametrize("verb", sorted(set(VERBS) - {"search"}))
def test_a_read_only_store_is_one_line_and_exit_1(
    capsys: pytest.CaptureFixture[str], read_only: dict[str, Path], verb: str
) -> None:
    capsys.readouterr()
    store = read_only["sessions" if verb.startswith("sessions") else "context"]
    code, err = run(capsys, *VERBS[verb], str(store))
    assert code == 1
    one_line(err, f"--store {store}: cannot ", "writable")


@needs_permissions
def test_a_read_only_context_store_is_still_searched(
    capsys: pytest.CaptureFixture[str], read_only: dict[str, Path]
) -> None:
    capsys.readouterr()
    assert main(VERBS["search"] + [str(read_only["context"])]) == 0
    assert "this is a bug" not in capsys.readouterr().err


def test_a_store_that_sqlite_cannot_open_is_named_as_root_too(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Root writes a read-only file: SQLite's refusal is made here, as a user meets it."""
    import sqlite3

    def refuse(*args: object, **kwargs: object) -> sqlite3.Connection:
        error = sqlite3.OperationalError("attempt to write a readonly database")
        error.sqlite_errorname = "SQLITE_READONLY"
        raise error

    monkeypatch.setattr(sqlite3, "connect", refuse)
    for verb in ("import", "sessions import"):
        code, err = run(capsys, *VERBS[verb], str(tmp_path / verb.replace(" ", "-")))
        assert code == 1
        one_line(err, "cannot open", "attempt to write a readonly database", "writable")
