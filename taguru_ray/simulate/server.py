"""The simulator's HTTP server: an OpenAI-compatible endpoint on aiohttp.

A request's life: parse and count it, decide its fault (script, then seeded
rate), build its content (the rule-based answer, varied for the request's run
under `--vary`), then wait for one of C generation slots (FIFO) and
hold it for the service time `latency_ms + completion_tokens / tokens_per_s`
(plus a stall) before answering. HTTP faults (429/5xx) answer at once and
never take a slot, like a gateway rejecting in front of a busy model.

Outcomes and tokens are counted when decided, not when the answer is sent,
so a client that gives up on a stalled request still shows in `/stats`.
The server runs with handler cancellation on: a client that disconnects
frees its slot, as a real model server aborts an abandoned generation.

`--require-key KEY` answers 401 to a completion or a model list without that key
(a Bearer, or Azure's api-key header); `--served-model NAME` (repeatable) serves
those names alone — another is a 404 `model_not_found` — and `GET /v1/models`
lists them (by default it lists `taguru-sim` and `*`: any name is served). Model
lists are counted apart from completions, under `models` in `/stats`.

`GET /health` answers 200 with an empty body and `GET /version` the simulator's
version, as vLLM's server does (`--engine simulate` health-checks it as it
would vLLM). Neither is counted.

`POST /v1/embeddings` answers deterministic vectors (simulate/embeddings.py) at
once, outside the slots and the fault script.

Its length (over 400 lines) is one server's: slots, latency, the OpenAI wire
shapes, the control endpoints and their counters.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import random
import socket
import time
from collections import Counter, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from aiohttp import web

from taguru_ray import __version__
from taguru_ray.simulate import embeddings
from taguru_ray.simulate.answers import (
    answer,
    content_text,
    cut_utf8,
    estimate_tokens,
    first_user_turn,
)
from taguru_ray.simulate.batch_desk import BatchBehaviour, BatchDesk, Trick
from taguru_ray.simulate.batches import OpenAIBatches
from taguru_ray.simulate.faults import (
    HTTP_FAULTS,
    SCHEMA_FAULTS,
    Completion,
    Fault,
    FaultKind,
    Script,
    ScriptError,
    ScriptRule,
    completion_for,
    parse_rules,
    pick_rate_fault,
)
from taguru_ray.simulate.message_batches import MessageBatches
from taguru_ray.simulate.quota import QuotaWindow
from taguru_ray.simulate.vary import run_of, vary_answer, without_run

MODEL_ID = "taguru-sim"
MAX_BODY_BYTES = 64 * 1024 * 1024  # aiohttp's 1 MiB default is below a big chunk
SHUTDOWN_GRACE_SECONDS = 0.5  # stalled requests must not hold up a SIGTERM


@dataclass(frozen=True)
class SimulatorConfig:
    """Everything `taguru-ray simulate` takes besides where to listen."""

    slots: int = 8
    latency_ms: float = 0.0
    tokens_per_s: float = 0.0
    fault_rates: Mapping[FaultKind, float] = field(default_factory=dict)
    script: tuple[ScriptRule, ...] = ()
    seed: int = 0
    retry_after: float = 1.0
    stall_seconds: float = 600.0
    capture: str | None = None  # a JSONL file every request's messages are appended to
    vary: float = 0.0  # --vary P: run-to-run variability of answers (simulate/vary.py)
    vary_seed: int = 0
    # The run of a request whose model name carries no `#run<N>`; "seen": one more than
    # the times this simulator answered the same prompt before (a benchmark's runs of
    # one model ask it one after another, so run k asks each prompt the k-th time).
    vary_run: int | str = 0
    # A provider's fixed-window rate limit, stated in x-ratelimit-* headers (quota.py).
    rate_limit_requests: int = 0
    rate_limit_tokens: int = 0
    rate_limit_window: float = 60.0
    require_key: str | None = None  # --require-key: a 401 for a request without it
    served_models: tuple[str, ...] = ()  # --served-model: these alone (empty: any name)
    # The batch APIs (simulate/batch_desk.py): --batch-delay, --batch-expire, --batch-fail-rate.
    batch: BatchBehaviour = field(default_factory=BatchBehaviour)

    def authorized(self, headers: Mapping[str, str]) -> bool:
        """Whether a request carries the key `require_key` asks for (as a Bearer, or in
        Azure's api-key header); always, when no key is required."""
        if self.require_key is None:
            return True
        bearer = headers.get("Authorization", "")
        return bearer == f"Bearer {self.require_key}" or headers.get("api-key") == self.require_key

    def serves(self, model: str) -> bool:
        """Whether `model` (less a `#run<N>` suffix, simulate/vary.py) is served."""
        return not self.served_models or without_run(model) in self.served_models

    def service_seconds(self, completion_tokens: int) -> float:
        """Time a request holds its slot: first token, then decoding."""
        decode = completion_tokens / self.tokens_per_s if self.tokens_per_s > 0 else 0.0
        return self.latency_ms / 1000.0 + decode


class Slots:
    """C concurrent generation slots with a strict FIFO queue beyond them.

    Hand-rolled rather than `asyncio.Semaphore` so that queue order is exact
    and the gauges (`in_flight`, `queued`, `max_in_flight`) are read where the
    state changes. A released slot passes straight to the oldest waiter.
    """

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"slots must be at least 1, got {capacity}")
        self.capacity = capacity
        self.in_flight = 0
        self.max_in_flight = 0
        self._waiters: deque[asyncio.Future[None]] = deque()

    @property
    def queued(self) -> int:
        return len(self._waiters)

    async def __aenter__(self) -> None:
        if self.in_flight < self.capacity and not self._waiters:
            self._take()
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self._release()  # granted and abandoned in the same tick
            else:
                self._waiters.remove(waiter)
            raise

    async def __aexit__(self, *exc: object) -> None:
        self._release()

    def _take(self) -> None:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def _release(self) -> None:
        self.in_flight -= 1
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                self._take()
                waiter.set_result(None)
                return


@dataclass
class Counters:
    """What `/stats` reports besides the slot gauges; zeroed by a reset."""

    requests: int = 0
    by_outcome: Counter[str] = field(default_factory=Counter)
    prompts: Counter[str] = field(default_factory=Counter)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # (seconds since the counters started, outcome) per request, newest last:
    # lets a test see *when* requests arrived, e.g. none inside a Retry-After pause.
    arrivals: deque[tuple[float, str]] = field(default_factory=lambda: deque(maxlen=100_000))
    models: Counter[int] = field(default_factory=Counter)  # GET /v1/models by status
    started: float = field(default_factory=time.monotonic)

    def count(self, outcome: str) -> None:
        self.by_outcome[outcome] += 1
        self.arrivals.append((round(time.monotonic() - self.started, 4), outcome))


class Simulator:
    """The server's state: slots, script, the fault RNG and the counters."""

    def __init__(self, config: SimulatorConfig) -> None:
        self.config = config
        self.slots = Slots(config.slots)
        self.script = Script(config.script)
        self.counters = Counters()
        self._rng = random.Random(config.seed)
        self._next_id = 0
        self.asked: Counter[tuple[str, str]] = Counter()  # (model, first user turn) answered
        self.quota = QuotaWindow(
            config.rate_limit_requests, config.rate_limit_tokens, config.rate_limit_window
        )

    def reset(self) -> None:
        """Back to a fresh start (keeping the current script rules).

        Counters, rule match counts and the fault RNG all restart, so the
        same requests after a reset meet the same faults as after startup.
        `max_in_flight` restarts from what is holding a slot right now.
        """
        self.counters = Counters()
        self.quota.reset()
        self.script.reset_counters()
        self._rng = random.Random(self.config.seed)
        self.slots.max_in_flight = self.slots.in_flight

    def stats(self) -> dict[str, Any]:
        c = self.counters
        return {
            "requests": c.requests,
            "by_outcome": dict(sorted(c.by_outcome.items())),
            "in_flight": self.slots.in_flight,
            "max_in_flight": self.slots.max_in_flight,
            "queued": self.slots.queued,
            "slots": self.slots.capacity,
            "prompt_tokens": c.prompt_tokens,
            "completion_tokens": c.completion_tokens,
            "prompts": dict(sorted(c.prompts.items())),
            "arrivals": [list(entry) for entry in c.arrivals],
            "models": {
                "requests": sum(c.models.values()),
                "by_status": {str(k): v for k, v in sorted(c.models.items())},
            },
        }

    def admit(self, user_turn: str | None) -> Fault | None:
        """Count an arriving request and decide its fault."""
        self.counters.requests += 1
        if user_turn is not None:
            self.counters.prompts[prompt_key(user_turn)] += 1
        rated = pick_rate_fault(self.config.fault_rates, self._rng)
        scripted = self.script.pick(user_turn or "")
        return scripted or (Fault(rated) if rated else None)

    def next_id(self) -> str:
        self._next_id += 1
        return f"chatcmpl-sim-{self._next_id}"


def prompt_key(user_turn: str) -> str:
    """The `/stats` `prompts` key: first 16 hex of sha256 of the user turn."""
    return hashlib.sha256(user_turn.encode("utf-8")).hexdigest()[:16]


SIMULATOR = web.AppKey("simulator", Simulator)
BATCH_DESK = web.AppKey("batch_desk", BatchDesk)


def create_app(config: SimulatorConfig) -> web.Application:
    """The aiohttp application with every route of SPEC section 6."""
    app = web.Application(client_max_size=MAX_BODY_BYTES)
    sim = app[SIMULATOR] = Simulator(config)
    desk = app[BATCH_DESK] = BatchDesk(
        lambda headers, raw: _line_answer(sim, headers, raw), replace(config.batch)
    )
    app.add_routes(
        [
            *OpenAIBatches(desk, config.authorized).routes(),
            *MessageBatches(desk, config.authorized).routes(),
            web.get("/batches/stats", _batch_stats),
            web.post("/batches/reset", _batch_reset),
            web.post("/batches/behaviour", _batch_behaviour),
            web.post("/batches/mischief", _batch_mischief),
            web.post("/v1/chat/completions", _chat_completions),
            web.post("/v1/embeddings", _embeddings),
            web.get("/v1/models", _models),
            web.get("/health", _health),
            web.get("/version", _version),
            web.get("/stats", _stats),
            web.post("/stats/reset", _reset),
            web.get("/script", _get_script),
            web.post("/script", _set_script),
        ]
    )
    return app


async def serve(
    config: SimulatorConfig,
    host: str,
    port: int,
    *,
    on_ready: Callable[[str], None],
    stop: asyncio.Event,
) -> None:
    """Listen on host:port, call `on_ready(base_url)`, serve until `stop` is set.

    Binding our own socket is how `--port 0` learns the port it got. Raises
    OSError when the address cannot be bound.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.create_server((host, port), family=family)
    runner = web.AppRunner(
        create_app(config),
        access_log=None,
        handler_cancellation=True,
        shutdown_timeout=SHUTDOWN_GRACE_SECONDS,
    )
    await runner.setup()
    try:
        await web.SockSite(runner, sock).start()
        bound = sock.getsockname()[1]
        shown = f"[{host}]" if family == socket.AF_INET6 else host
        on_ready(f"http://{shown}:{bound}/v1")
        await stop.wait()
    finally:
        await runner.cleanup()
        sock.close()


@dataclass(frozen=True)
class _ChatRequest:
    model: str
    messages: list[dict[str, Any]]
    max_tokens: int | None
    response_format: str | None = None  # its "type", when one was sent


_NOT_JSON = object()


def _parse_chat_request(body: object) -> _ChatRequest | str:
    """The request, or the reason it is a 400."""
    if body is _NOT_JSON:
        return "the request body is not JSON"
    if not isinstance(body, dict):
        return "the request body must be a JSON object"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "'messages' is required and must be a non-empty array"
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            return f"messages[{i}] must be an object with a string 'role'"
    cap = body.get("max_tokens", body.get("max_completion_tokens"))
    if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 1):
        return f"'max_tokens' must be a whole number >= 1, got {json.dumps(cap)}"
    model = body.get("model")
    shape = body.get("response_format")
    kind = shape.get("type") if isinstance(shape, dict) else None
    return _ChatRequest(
        model if isinstance(model, str) else MODEL_ID,
        messages,
        cap,
        kind if isinstance(kind, str) else None,
    )


async def _chat_completions(request: web.Request) -> web.Response:
    return await chat_response(request.app[SIMULATOR], request.headers, await request.read())


async def chat_response(sim: Simulator, headers: Mapping[str, str], raw: bytes) -> web.Response:
    """One /v1/chat/completions request answered: the live route's, and each line of a
    batch (simulate/batches.py) — one answer machinery, one set of counters and faults."""
    if not sim.config.authorized(headers):
        sim.counters.requests += 1
        sim.counters.count("401")
        return _http_fault(Fault("401"), sim.config)
    try:
        body: object = json.loads(raw)
    except ValueError:
        body = _NOT_JSON
    parsed = _parse_chat_request(body)
    if isinstance(parsed, str):
        sim.counters.requests += 1
        sim.counters.count("bad_request")
        return _error(400, parsed, "invalid_request_error")
    if not sim.config.serves(parsed.model):
        sim.counters.requests += 1
        sim.counters.count("404")
        return _http_fault(Fault("404"), sim.config)

    if sim.config.capture:
        line = json.dumps({"messages": parsed.messages}, ensure_ascii=False) + "\n"
        with open(sim.config.capture, "a", encoding="utf-8") as capture:
            capture.write(line)
    user_turn = first_user_turn(parsed.messages)
    fault = sim.admit(user_turn)
    quota_headers: dict[str, str] = {}
    if sim.quota.active:
        now = time.monotonic()
        prompt = estimate_tokens("".join(content_text(m.get("content")) for m in parsed.messages))
        if not sim.quota.admit(prompt + (parsed.max_tokens or prompt), now):
            sim.counters.count("rate_limited")
            wait = sim.quota.retry_after(now)
            return _error(
                429,
                "Rate limit reached for requests (simulated): the window is spent",
                "rate_limit_error",
                code="rate_limit_exceeded",
                headers={
                    **sim.quota.headers(now),
                    "Retry-After": str(math.ceil(wait)),
                    "retry-after-ms": str(math.ceil(wait * 1000)),
                },
            )
        quota_headers = sim.quota.headers(now)
    if (
        fault is not None
        and fault.kind in SCHEMA_FAULTS
        and parsed.response_format != "json_schema"
    ):
        fault = None  # these misbehave only under constrained decoding
    if fault is not None and fault.kind == "reject_schema":
        sim.counters.count("reject_schema")
        return _error(
            400,
            "response_format json_schema is not supported by this model (simulated)",
            "invalid_request_error",
            code="unsupported_parameter",
        )
    if fault is not None and fault.kind == "schema_loop" and parsed.max_tokens is None:
        fault = Fault("stall", stall_seconds=fault.stall_seconds)  # loops until the client quits
    if fault is not None and fault.kind in HTTP_FAULTS:
        sim.counters.count(fault.kind)
        return _http_fault(fault, sim.config)

    kind = fault.kind if fault else None
    if fault is not None and fault.answer is not None:
        completion = Completion(fault.answer, "stop")
    else:
        completion = completion_for(kind, _answer(parsed, user_turn, sim), user_turn or "")
    content, finish_reason = completion.content, completion.finish_reason
    if parsed.max_tokens is not None and estimate_tokens(content) > parsed.max_tokens:
        content, finish_reason = cut_utf8(content or "", parsed.max_tokens * 4), "length"
    scripted = "scripted" if fault is not None and fault.answer is not None else None
    outcome = kind or ("length" if finish_reason == "length" else scripted or "ok")
    prompt_tokens = estimate_tokens(
        "".join(content_text(m.get("content")) for m in parsed.messages)
    )
    completion_tokens = estimate_tokens(content)
    sim.counters.count(outcome)
    sim.counters.prompt_tokens += prompt_tokens
    sim.counters.completion_tokens += completion_tokens

    async with sim.slots:
        hold = _stall_seconds(fault, sim.config) + sim.config.service_seconds(completion_tokens)
        if hold > 0:
            await asyncio.sleep(hold)

    message: dict[str, Any] = {"role": "assistant", "content": content}
    if finish_reason == "content_filter":
        message["refusal"] = "The request was declined by the content filter (simulated)."
    return web.json_response(
        {
            "id": sim.next_id(),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": parsed.model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        },
        headers=quota_headers,
    )


def _answer(parsed: _ChatRequest, user_turn: str | None, sim: Simulator) -> str:
    """The rule-based answer, varied for the request's run under `--vary` (the run and
    the variations: simulate/vary.py)."""
    text, config = answer(parsed.messages), sim.config
    if config.vary <= 0 or user_turn is None:
        return text
    if config.vary_run == "seen":
        sim.asked[(parsed.model, user_turn)] += 1
        run = run_of(parsed.model, sim.asked[(parsed.model, user_turn)])
    else:
        run = run_of(parsed.model, int(config.vary_run))
    return vary_answer(text, user_turn, rate=config.vary, seed=config.vary_seed, run=run)


def _stall_seconds(fault: Fault | None, config: SimulatorConfig) -> float:
    if fault is None or fault.kind != "stall":
        return 0.0
    return config.stall_seconds if fault.stall_seconds is None else fault.stall_seconds


def _http_fault(fault: Fault, config: SimulatorConfig) -> web.Response:
    if fault.kind == "429":
        wait = config.retry_after if fault.retry_after is None else fault.retry_after
        return _error(
            429,
            "Rate limit reached (simulated); retry after the Retry-After delay",
            "rate_limit_error",
            code="rate_limit_exceeded",
            headers={"Retry-After": _format_seconds(wait)},
        )
    if fault.kind == "503":
        return _error(503, "The model is overloaded (simulated)", "server_error", "overloaded")
    if fault.kind == "401":
        return _error(
            401,
            "Incorrect API key provided (simulated)",
            "invalid_request_error",
            "invalid_api_key",
        )
    if fault.kind == "403":
        return _error(
            403,
            "This key has no access to this model (simulated)",
            "invalid_request_error",
            "permission_denied",
        )
    if fault.kind == "404":
        return _error(
            404,
            "The model does not exist or you do not have access to it (simulated)",
            "invalid_request_error",
            "model_not_found",
        )
    return _error(500, "The server had an error (simulated)", "server_error", "internal_error")


def _format_seconds(seconds: float) -> str:
    """Whole seconds as an integer (the HTTP form), fractions as a decimal."""
    return str(int(seconds)) if seconds == int(seconds) else f"{seconds:g}"


def _error(
    status: int,
    message: str,
    kind: str,
    code: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> web.Response:
    """An OpenAI-style error body."""
    body = {"error": {"message": message, "type": kind, "param": None, "code": code}}
    return web.json_response(body, status=status, headers=headers)


async def _embeddings(request: web.Request) -> web.Response:
    """Deterministic vectors (simulate/embeddings.py); never faulted, never counted in
    `/stats`, which counts chat completions."""
    try:
        parsed = embeddings.parse_request(json.loads(await request.read()))
    except ValueError:
        parsed = "the request body is not JSON"
    if isinstance(parsed, str):
        return _error(400, parsed, "invalid_request_error")
    return web.json_response(embeddings.answer(*parsed))


async def _models(request: web.Request) -> web.Response:
    """The served models; `*` after `taguru-sim` when any name is served (as a proxy lists
    a wildcard route). Counted by status, apart from the completions."""
    sim = request.app[SIMULATOR]
    if not sim.config.authorized(request.headers):
        sim.counters.models[401] += 1
        return _http_fault(Fault("401"), sim.config)
    sim.counters.models[200] += 1
    names = sim.config.served_models or (MODEL_ID, "*")
    return web.json_response(
        {
            "object": "list",
            "data": [{"id": name, "object": "model", "owned_by": "taguru-ray"} for name in names],
        }
    )


async def _health(request: web.Request) -> web.Response:
    """Up: the server takes requests (vLLM's and SGLang's /health answer the same)."""
    return web.Response(status=200)


async def _version(request: web.Request) -> web.Response:
    return web.json_response({"version": __version__})


async def _stats(request: web.Request) -> web.Response:
    return web.json_response(request.app[SIMULATOR].stats())


async def _reset(request: web.Request) -> web.Response:
    sim = request.app[SIMULATOR]
    sim.reset()
    return web.json_response(sim.stats())


async def _get_script(request: web.Request) -> web.Response:
    rules = request.app[SIMULATOR].script.rules
    return web.json_response([rule.to_json() for rule in rules])


async def _set_script(request: web.Request) -> web.Response:
    try:
        rules = parse_rules(json.loads(await request.read()))
    except ScriptError as exc:
        return _error(400, str(exc), "invalid_request_error")
    except ValueError:
        return _error(
            400, "the body is not JSON (expected an array of rules)", "invalid_request_error"
        )
    sim = request.app[SIMULATOR]
    sim.script.replace(rules)
    return web.json_response([rule.to_json() for rule in sim.script.rules])


async def _line_answer(
    sim: Simulator, headers: Mapping[str, str], raw: bytes
) -> tuple[int, dict[str, Any]]:
    """A batch line answered as the live route answers it: (status, JSON body)."""
    response = await chat_response(sim, headers, raw)
    body = response.body if isinstance(response.body, bytes) else b"{}"
    return response.status, json.loads(body)


async def _batch_stats(request: web.Request) -> web.Response:
    """The batch desk's counters: batches created, requests by custom_id, those sent twice."""
    return web.json_response(request.app[BATCH_DESK].stats())


async def _batch_reset(request: web.Request) -> web.Response:
    """Zero the counters and the mischief; with a body `{"forget": true}`, drop every file
    and batch too (a test that lists batches starts from none)."""
    desk = request.app[BATCH_DESK]
    raw = await request.read()
    try:
        body = json.loads(raw) if raw.strip() else {}
    except ValueError:
        body = None
    if not isinstance(body, dict) or set(body) - {"forget"}:
        return _error(400, 'the body is {} or {"forget": true}', "invalid_request_error")
    desk.reset(forget=body.get("forget") is True)
    return web.json_response(desk.stats())


async def _batch_mischief(request: web.Request) -> web.Response:
    """Replace the scripted misbehaviours of the batch routes (`batch_desk.MISCHIEF`): a
    list of {"on", "do", "times"}, each played on the next matching calls."""
    desk = request.app[BATCH_DESK]
    try:
        listed = json.loads(await request.read())
        if not isinstance(listed, list):
            raise ValueError("the body is a list of tricks")
        tricks = [Trick.of(item) for item in listed]
    except ValueError as error:
        return _error(400, str(error), "invalid_request_error")
    desk.mischief[:] = tricks
    return web.json_response(desk.stats())


async def _batch_behaviour(request: web.Request) -> web.Response:
    """Change delay_seconds, expire, fail_rate (and seed) of batches created from now on;
    the counters stay (POST /batches/reset zeroes them)."""
    desk = request.app[BATCH_DESK]
    try:
        desk.behaviour.update(json.loads(await request.read()))
    except (ValueError, AttributeError) as error:
        return _error(400, str(error), "invalid_request_error")
    return web.json_response(desk.stats())
