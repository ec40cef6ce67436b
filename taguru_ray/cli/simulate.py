"""`taguru-ray simulate`: run the model simulator until SIGINT/SIGTERM.

Parsing only; the server is `taguru_ray.simulate`. The base URL is the first
line of stdout (flushed) so a parent process can read it; nothing else is
written to stdout. Exit codes: 0 after a signal, 1 when the address cannot be
bound, 2 for a bad flag (including an unreadable or invalid `--script` file).
"""

from __future__ import annotations

import argparse
import asyncio
import math
import signal
import sys
from collections.abc import Callable
from pathlib import Path

from taguru_ray.cli.args import OneLineParser
from taguru_ray.simulate import (
    FAULT_KINDS,
    FaultKind,
    ScriptError,
    ScriptRule,
    SimulatorConfig,
    fault_rates,
    parse_fault_rate,
    parse_script_text,
    serve,
)
from taguru_ray.simulate.batch_desk import BatchBehaviour

PROG = "taguru-ray simulate"


def main(argv: list[str]) -> int:
    parser = _parser()
    try:
        args = parser.parse_args(argv)
        rates = fault_rates(args.fault_rate)
    except ScriptError as exc:
        try:
            parser.error(f"argument --fault-rate: {exc}")
        except SystemExit as exit_:
            return exit_.code if isinstance(exit_.code, int) else 2
    except SystemExit as exc:  # argparse's usage error (2) or --help (0)
        return exc.code if isinstance(exc.code, int) else 2
    config = SimulatorConfig(
        slots=args.slots,
        latency_ms=args.latency_ms,
        tokens_per_s=args.tokens_per_s,
        fault_rates=rates,
        script=tuple(args.script),
        seed=args.seed,
        retry_after=args.retry_after,
        stall_seconds=args.stall_seconds,
        capture=args.capture,
        vary=args.vary,
        vary_seed=args.vary_seed,
        vary_run=args.vary_run,
        rate_limit_requests=args.rate_limit_requests,
        rate_limit_tokens=args.rate_limit_tokens,
        rate_limit_window=args.rate_limit_window,
        require_key=args.require_key,
        served_models=tuple(args.served_model),
        batch=BatchBehaviour(
            args.batch_delay, args.batch_expire, args.batch_fail_rate, seed=args.seed
        ),
    )
    try:
        asyncio.run(_run(config, args.host, args.port))
    except OSError as exc:
        print(f"{PROG}: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 1
    return 0


async def _run(config: SimulatorConfig, host: str, port: int) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    await serve(config, host, port, on_ready=_announce, stop=stop)


def _announce(base_url: str) -> None:
    print(base_url, flush=True)


def _parser() -> OneLineParser:
    p = OneLineParser(
        label="simulate",
        prog=PROG,
        description="An OpenAI-compatible model simulator on loopback (not a model).",
        epilog=VARY_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument(
        "--port",
        type=_bounded(int, 0, 65535),
        default=0,
        help="port; 0 picks a free one (default 0). The base URL is stdout's first line",
    )
    p.add_argument(
        "--slots",
        type=_bounded(int, 1),
        default=8,
        help="concurrent generation slots; more requests wait in a FIFO queue (default 8)",
    )
    p.add_argument(
        "--latency-ms",
        type=_bounded(float, 0),
        default=0.0,
        help="time to first token in ms (default 0)",
    )
    p.add_argument(
        "--tokens-per-s",
        type=_bounded(float, 0),
        default=0.0,
        help="decode speed in tokens/s; 0 = instant (default 0)",
    )
    p.add_argument(
        "--fault-rate",
        type=_fault_rate,
        action="append",
        default=[],
        metavar="KIND=P",
        help="inject KIND with probability P per request, seeded (repeatable); "
        f"kinds: {', '.join(FAULT_KINDS)}",
    )
    p.add_argument(
        "--script",
        type=_script_file,
        default=[],
        metavar="FILE",
        help="request-matched fault rules: a JSON array or JSONL of rule objects",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the fault draws (default 0)")
    p.add_argument(
        "--retry-after",
        type=_bounded(float, 0),
        default=1.0,
        metavar="SECONDS",
        help="Retry-After a 429 sends (default 1)",
    )
    p.add_argument(
        "--stall-seconds",
        type=_bounded(float, 0),
        default=600.0,
        metavar="S",
        help="how long a stall hangs before answering (default 600)",
    )
    p.add_argument(
        "--capture",
        metavar="FILE",
        help="append every chat request's messages to FILE as one JSON line (what a model "
        "would have been shown — for checking what a run sends)",
    )
    p.add_argument(
        "--vary",
        type=_bounded(float, 0, 1),
        default=0.0,
        metavar="P",
        help="run-to-run answer variability: each association is varied with probability P "
        "(0..1; default 0 = the same answer every run, byte for byte). See below",
    )
    p.add_argument(
        "--vary-seed",
        type=int,
        default=0,
        metavar="S",
        help="seed of the --vary choices, apart from --seed (default 0)",
    )
    p.add_argument(
        "--vary-run",
        type=_vary_run,
        default=0,
        metavar="N|seen",
        help="the run of a request whose model name does not end in #run<N> (default 0); "
        "seen: the number of times this simulator has been asked the same prompt",
    )
    p.add_argument(
        "--rate-limit-requests",
        type=_bounded(int, 0),
        default=0,
        metavar="N",
        help="a provider's limit: N requests per window, stated in x-ratelimit-* headers; "
        "past it a 429 (default 0 = none)",
    )
    p.add_argument(
        "--rate-limit-tokens",
        type=_bounded(int, 0),
        default=0,
        metavar="K",
        help="K tokens per window (prompt plus max_tokens), stated likewise (default 0 = none)",
    )
    p.add_argument(
        "--rate-limit-window",
        type=_bounded(float, 0.001),
        default=60.0,
        metavar="S",
        help="the rate-limit window in seconds, opened by the first request (default 60)",
    )
    p.add_argument(
        "--require-key",
        metavar="KEY",
        help="answer 401 to a completion or a model list that does not carry KEY (as a "
        "Bearer, or an api-key header) — a provider whose key is wrong or missing",
    )
    p.add_argument(
        "--served-model",
        action="append",
        default=[],
        metavar="NAME",
        help="serve NAME alone (repeatable): another model is a 404 model_not_found, and "
        "GET /v1/models lists these (default: any name is served)",
    )
    p.add_argument(
        "--batch-delay",
        type=_bounded(float, 0),
        default=0.0,
        metavar="S",
        help="seconds from a batch's creation (/v1/batches, /v1/messages/batches) to its "
        "answers (default 0)",
    )
    p.add_argument(
        "--batch-expire",
        type=_bounded(int, 0),
        default=0,
        metavar="N",
        help="the first N batches created expire with nothing answered (default 0)",
    )
    p.add_argument(
        "--batch-fail-rate",
        type=_bounded(float, 0, 1),
        default=0.0,
        metavar="P",
        help="each batch line fails alone with probability P, seeded by --seed (default 0)",
    )
    return p


VARY_EPILOG = """\
--vary P: with P > 0, each association of an extraction answer is, with
probability P, dropped, given another weight (-w, 0.5w, 0.75w, 1.5w or 2w),
moved to the previous or next paragraph of the chunk, or given a case variant
of its label; with probability P/4 the reversed association is added. Aliases
left without their canonical are dropped. Every choice is a sha256 of
(--vary-seed, run, prompt, association): the same seed, run and prompt answer
the same from any simulator, in any order; another run answers differently.
Varied answers stay valid under the extract contract.

The run of a request: the number after "#run" ending its model name
(--model taguru-sim#run2; "#run02" is run 2), else --vary-run. So one shared
simulator serves several runs by model name, or one simulator per run is
started with --vary-run N and needs no model name change. With --vary-run
seen, the k-th time the simulator is asked a prompt answers as run k: the
runs of a benchmark matrix, which ask one endpoint one after another, differ
from each other with nothing to configure.
"""


def _vary_run(text: str) -> int | str:
    if text == "seen":
        return text
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number or 'seen'") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text} is below 0")
    return value


def _bounded(
    kind: type[int] | type[float], low: float, high: float | None = None
) -> Callable[[str], float]:
    """An argparse type: a finite number of `kind` within [low, high]."""

    def convert(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            wanted = "a whole number" if kind is int else "a number"
            raise argparse.ArgumentTypeError(f"expected {wanted}, got {text!r}") from None
        if not math.isfinite(value) or value < low or (high is not None and value > high):
            bounds = f">= {low:g}" if high is None else f"in {low:g}..{high:g}"
            raise argparse.ArgumentTypeError(f"must be {bounds}, got {text!r}")
        return value

    convert.__name__ = kind.__name__  # argparse names the type in its messages
    return convert


def _fault_rate(text: str) -> tuple[FaultKind, float]:
    try:
        return parse_fault_rate(text)
    except ScriptError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _script_file(text: str) -> list[ScriptRule]:
    try:
        return parse_script_text(Path(text).read_text(encoding="utf-8"))
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"cannot read {text}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise argparse.ArgumentTypeError(f"{text} is not UTF-8") from None
    except ScriptError as exc:
        raise argparse.ArgumentTypeError(f"{text}: {exc}") from None


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
