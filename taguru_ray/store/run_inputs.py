"""The files a run reads besides its segments: ``--vocabulary`` and ``--schema``.

Both are read once, on the driver, before the lock or any write: a file that
cannot be used is a startup error (exit 1) naming the flag, the file and the
fix, and an asked-for steering input never silently turns off. What they
hash to (`InputDigests`) travels with them, so the manifest and checkpoint
fingerprints — computed wherever a segment is scanned — see the content, not
the path.
"""

from __future__ import annotations

from taguru_ray.contract.context_schema import (
    ContextSchema,
    SchemaError,
    load_schema,
)
from taguru_ray.contract.context_schema import schema_digest as digest_of_schema
from taguru_ray.errors import StartupError, TaguruRayError, UsageError
from taguru_ray.pipeline.run_inputs import InputDigests, RunInputs
from taguru_ray.pipeline.vocabulary import (
    Vocabulary,
    relations_digest,
    vocabulary_digest,
)
from taguru_ray.store.inputs import read_regular
from taguru_ray.store.redact_key import redaction_key
from taguru_ray.store.vocabulary import VocabularyError, load_vocabulary
from taguru_ray.text.redact import (
    Rule,
    RulesError,
    builtin_rules,
    groups_from_setting,
    parse_rules_file,
    redaction_input,
)


def read_run_inputs(
    *,
    vocabulary: str | None,
    schema: str | None,
    redact: str,
    redact_rules: str | None,
    redact_key: str | None,
    chunk_context: str,
) -> RunInputs:
    """Read the inputs the flags name, with what they hash to."""
    loaded_vocabulary = _vocabulary(vocabulary) if vocabulary else None
    loaded_schema = _schema(schema) if schema else None
    rules, redaction = _redaction(redact, redact_rules)
    key = redaction_key(redact_key) if rules else b""
    digests = InputDigests(
        redaction_input=redaction,
        vocabulary_digest=vocabulary_digest(loaded_vocabulary) if loaded_vocabulary else "",
        ingested_digest=relations_digest(loaded_vocabulary)
        if loaded_vocabulary and chunk_context == "ingested"
        else "",
        schema_digest=digest_of_schema(loaded_schema) if loaded_schema else "",
    )
    return RunInputs(loaded_vocabulary, loaded_schema, rules, key, digests)


def _redaction(redact: str, redact_rules: str | None) -> tuple[tuple[Rule, ...], str]:
    """The rules --redact applies, and the manifest's `redaction` value they make."""
    if not redact:
        return (), ""
    groups = groups_from_setting(redact)
    rules = list(builtin_rules(groups))
    digest = None
    if redact_rules:
        path = redact_rules
        data = _read("--redact-rules", path, UsageError)
        try:
            own, digest = parse_rules_file(data, path=path)
        except RulesError as error:
            raise UsageError(str(error)) from None
        rules.extend(own)
    return tuple(rules), redaction_input(groups, digest)


def _read(flag: str, path: str, refusal: type[TaguruRayError]) -> bytes:
    """A flag's file, local or fsspec URL; unreadable is `refusal` naming flag and file."""
    try:
        return read_regular(path)
    except (OSError, ValueError) as error:
        raise refusal(f"{flag} {path}: cannot be read ({error})") from None


def _vocabulary(path: str) -> Vocabulary:
    # The error already names the file (and line) inside PATH that is at fault.
    try:
        return load_vocabulary(path)
    except VocabularyError as error:
        raise StartupError(
            f"--vocabulary {error} — point it at an export of the target context "
            "(taguru export --out DIR) or a folder of its *.jsonl source files"
        ) from None


def _schema(path: str) -> ContextSchema:
    data = _read("--schema", path, StartupError)
    try:
        return load_schema(data, path=path)
    except SchemaError as error:
        raise StartupError(
            f"--schema {path}: {error.detail} — "
            "fix the document (the shape `taguru schema get` prints) or drop --schema"
        ) from None
