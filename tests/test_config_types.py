"""The TOML run file and the Python API take a setting's types from one declaration."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from taguru_ray.contract.settings.model import declarations
from taguru_ray.contract.settings.python import as_flag, takes_in_words
from taguru_ray.errors import UsageError
from taguru_ray.settings.resolve import config_text

SAMPLES: list[Any] = [True, False, 3, 2.5, ["a", "b"], [1], {"a": 1}, datetime.date(2026, 1, 2)]


@pytest.mark.parametrize("declared", list(declarations()), ids=lambda d: d.name)
def test_a_toml_value_reads_as_the_same_python_value_would(declared: Any) -> None:
    for value in SAMPLES:
        try:
            expected = as_flag(declared, value)
        except ValueError:
            with pytest.raises(UsageError, match=f"takes {takes_in_words(declared)}, got"):
                config_text(declared, value, declared.name)
        else:
            assert config_text(declared, value, declared.name) == expected


def test_toml_text_is_the_flags_text_for_the_settings_parser() -> None:
    every = {declared.name: declared for declared in declarations()}
    assert config_text(every["workers"], "2", "workers") == "2"
    assert config_text(every["tags"], "a", "tags") == ["a"]
    with pytest.raises(UsageError, match="takes true or false, got 'yes'"):
        config_text(every["force"], "yes", "force")  # a switch with no variable
