"""The OpenAI-compatible model simulator behind `taguru-ray simulate` (SPEC 6).

Not a model: a rule-based extractor (`answers`), its seeded run-to-run
variability (`vary`), seeded and scripted faults (`faults`), an aiohttp server
with generation slots and a latency model (`server`), OpenAI's and Anthropic's
batch APIs answered by the same machinery (`batch_desk`, `batches`,
`message_batches`), and a subprocess harness for tests and benchmarks
(`harness`).
"""

from taguru_ray.simulate.answers import (
    EMPTY_ANSWER,
    answer,
    answer_for_turn,
    blocks_of,
    estimate_tokens,
    first_user_turn,
    is_overview_ask,
    overview_for_turn,
)
from taguru_ray.simulate.faults import (
    FAULT_KINDS,
    HTTP_FAULTS,
    Completion,
    Fault,
    FaultKind,
    Script,
    ScriptError,
    ScriptRule,
    completion_for,
    fault_rates,
    parse_fault_rate,
    parse_rule,
    parse_rules,
    parse_script_text,
    pick_rate_fault,
)
from taguru_ray.simulate.harness import SimulatorProcess
from taguru_ray.simulate.names import names_in
from taguru_ray.simulate.server import MODEL_ID, SimulatorConfig, create_app, prompt_key, serve
from taguru_ray.simulate.vary import run_of, vary_answer

__all__ = [
    "EMPTY_ANSWER",
    "FAULT_KINDS",
    "HTTP_FAULTS",
    "MODEL_ID",
    "Completion",
    "Fault",
    "FaultKind",
    "Script",
    "ScriptError",
    "ScriptRule",
    "SimulatorConfig",
    "SimulatorProcess",
    "answer",
    "answer_for_turn",
    "blocks_of",
    "completion_for",
    "create_app",
    "estimate_tokens",
    "fault_rates",
    "first_user_turn",
    "is_overview_ask",
    "names_in",
    "overview_for_turn",
    "parse_fault_rate",
    "parse_rule",
    "parse_rules",
    "parse_script_text",
    "pick_rate_fault",
    "prompt_key",
    "run_of",
    "serve",
    "vary_answer",
]
