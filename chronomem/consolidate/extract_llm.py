"""The LLM extractor's client side: configuration, calls with retries and budgets, prompts, strict parsing.

One request (`extract_messages`: the note, the nearest live facts, the project's slot vocabulary) goes over
one of two transports, in this order of preference:

1. the MCP client's own model through sampling (`sampling/createMessage`), when the connected client
   declares the capability; the server supplies that transport (server/sampling.py), this module its
   configuration (`SamplingConfig`) and the hourly call budget (`HourlyBudget`);
2. a model the user configured through litellm (`LiteLLMTransport`).

With neither, no LLM is asked (the rules alone extract). `LLMClient` is the same for both: it sends,
retries what is transient, validates the answer, and counts calls and tokens (`Usage`).

Sampling is on whenever a client offers it, unless switched off:

- `CHRONOMEM_SAMPLING=off` (or `0`, `false`, `no`) — never ask the client's model;
- `CHRONOMEM_SAMPLING_CALLS_PER_HOUR` (default 60) — at most this many sampling requests in any hour;
- `CHRONOMEM_SAMPLING_TIMEOUT` (s, default 60) — a client that has not answered by then is taken as gone;
- `CHRONOMEM_SAMPLING_MAX_TOKENS` (default 1024) — the answer's length asked for.

litellm is configured by environment variables, and off unless `CHRONOMEM_LLM_MODEL` is set:

- `CHRONOMEM_LLM_MODEL` — any litellm model name (`openai/gpt-4o-mini`, `ollama/llama3.1`,
  `openai/<name>` for an OpenAI-compatible local server, …);
- `CHRONOMEM_LLM_API_BASE`, `CHRONOMEM_LLM_API_KEY` — optional endpoint and key;
- `CHRONOMEM_LLM_TIMEOUT` (s, default 30), `CHRONOMEM_LLM_CALLS_PER_BATCH` (default 8).

litellm is imported only when a call is about to be made (it takes seconds to import),
with `LITELLM_LOCAL_MODEL_COST_MAP=True` set first so the import never reaches the network.
Transient failures (timeouts, connection errors, 429, 5xx) are retried with exponential
backoff; every attempt counts against the batch's `CallBudget`. An answer that is not the
strict JSON asked for, or that names an id it was not shown, is rejected and asked again
with the reason; after `max_attempts` it raises `MalformedAnswer` and the caller skips the
chunk with a log line. Parsing is pure (`parse_operations`), so nothing is applied from an
answer until every operation in it has been validated.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, TypeVar

from chronomem.errors import ChronomemError
from chronomem.records import UTC, MemoryRecord

log = logging.getLogger(__name__)

T = TypeVar("T")

#: Most operations one answer may carry.
MAX_OPERATIONS = 10
OPS = ("ADD", "UPDATE", "INVALIDATE", "NONE")


@dataclass(frozen=True)
class LLMConfig:
    model: str
    api_base: str | None = None
    api_key: str | None = None
    timeout: float = 30.0
    max_attempts: int = 3
    backoff: float = 0.5
    calls_per_batch: int = 8

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> LLMConfig | None:
        """The configured LLM, or None when `CHRONOMEM_LLM_MODEL` is unset."""
        env = os.environ if environ is None else environ
        model = (env.get("CHRONOMEM_LLM_MODEL") or "").strip()
        if not model:
            return None
        return cls(
            model=model,
            api_base=env.get("CHRONOMEM_LLM_API_BASE") or None,
            api_key=env.get("CHRONOMEM_LLM_API_KEY") or None,
            timeout=_number(env.get("CHRONOMEM_LLM_TIMEOUT"), 30.0),
            calls_per_batch=int(_number(env.get("CHRONOMEM_LLM_CALLS_PER_BATCH"), 8)),
        )


#: Sampling requests allowed in any hour, unless CHRONOMEM_SAMPLING_CALLS_PER_HOUR says otherwise.
SAMPLING_CALLS_PER_HOUR = 60
_OFF = {"off", "0", "false", "no", "none", "disabled"}


@dataclass(frozen=True)
class SamplingConfig:
    """Whether and how much the consolidator may ask the MCP client's own model (sampling)."""

    enabled: bool = True
    calls_per_hour: int = SAMPLING_CALLS_PER_HOUR
    timeout: float = 60.0
    max_tokens: int = 1024
    calls_per_batch: int = 8

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> SamplingConfig:
        env = os.environ if environ is None else environ
        return cls(
            enabled=(env.get("CHRONOMEM_SAMPLING") or "on").strip().lower() not in _OFF,
            calls_per_hour=max(0, int(_number(env.get("CHRONOMEM_SAMPLING_CALLS_PER_HOUR"), SAMPLING_CALLS_PER_HOUR))),
            timeout=max(0.1, _number(env.get("CHRONOMEM_SAMPLING_TIMEOUT"), 60.0)),
            max_tokens=max(64, int(_number(env.get("CHRONOMEM_SAMPLING_MAX_TOKENS"), 1024))),
        )

    def llm_config(self) -> LLMConfig:
        """The client settings of the sampling transport (retries of malformed answers, calls per batch)."""
        return LLMConfig(model="the client's model (sampling)", timeout=self.timeout, calls_per_batch=self.calls_per_batch)


class LLMError(ChronomemError):
    """The LLM could not be reached or refused the request (after retries)."""


class MalformedAnswer(ValueError):
    """An answer that is not what was asked for; the message says why, in one line."""


class BudgetExhausted(Exception):
    """The batch's budget of LLM calls is spent."""


class CallBudget:
    """How many more LLM calls this batch may make."""

    def __init__(self, calls: int) -> None:
        self.remaining = calls
        self.used = 0

    def take(self) -> None:
        if self.remaining <= 0:
            raise BudgetExhausted("no LLM calls left in this batch")
        self.remaining -= 1
        self.used += 1


class HourlyBudget:
    """At most `calls` calls in any sliding hour (thread-safe; the clock is injectable for tests)."""

    def __init__(self, calls: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.calls = calls
        self._clock = clock
        self._times: deque[float] = deque()
        self._lock = threading.Lock()

    def _trim(self) -> None:
        cutoff = self._clock() - 3600.0
        while self._times and self._times[0] <= cutoff:
            self._times.popleft()

    def left(self) -> int:
        with self._lock:
            self._trim()
            return max(0, self.calls - len(self._times))

    def take(self) -> None:
        with self._lock:
            self._trim()
            if len(self._times) >= self.calls:
                raise BudgetExhausted(f"the hour's {self.calls} calls are spent")
            self._times.append(self._clock())


@dataclass(frozen=True)
class Completion:
    """One answer: its text, and its token counts when the answer says them."""

    text: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


@dataclass
class Usage:
    """What one transport has cost since the process started: calls, tokens reported, notes read, failures."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    notes: int = 0
    failures: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(vars(self))


class Transport(Protocol):
    """How a request reaches a model: litellm (`LiteLLMTransport`) or the MCP client (server/sampling.py)."""

    name: str

    def available(self) -> bool: ...

    def transient(self) -> tuple[type[BaseException], ...]: ...

    def complete(self, messages: list[dict[str, str]]) -> Completion: ...


@dataclass(frozen=True)
class Operation:
    """One validated operation of an answer."""

    op: str  # ADD | UPDATE | INVALIDATE
    id: str | None = None
    subject: str | None = None
    predicate: str | None = None
    object: str | None = None
    valid_from: datetime | None = None
    reason: str | None = None


# --------------------------------------------------------------------------- the client
class LiteLLMTransport:
    """litellm chat completions to the model the user configured (`LLMConfig`)."""

    name = "litellm"

    def __init__(self, config: LLMConfig) -> None:
        self.config = config
        self._litellm: Any = None

    def available(self) -> bool:
        return True

    def _lib(self) -> Any:
        if self._litellm is None:
            os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # before the import: no price-map fetch
            import litellm

            litellm.suppress_debug_info = True  # it prints hints to stdout, which carries JSON-RPC
            litellm.telemetry = False
            self._litellm = litellm
        return self._litellm

    def transient(self) -> tuple[type[BaseException], ...]:
        return _transient_errors(self._lib())

    def complete(self, messages: list[dict[str, str]]) -> Completion:
        response = self._lib().completion(
            model=self.config.model,
            messages=messages,
            api_base=self.config.api_base,
            api_key=self.config.api_key,
            timeout=self.config.timeout,
            temperature=0,
            response_format={"type": "json_object"},
            drop_params=True,
            num_retries=0,
            max_retries=0,
        )
        usage = getattr(response, "usage", None)
        return Completion(
            response.choices[0].message.content or "",
            _count(getattr(usage, "prompt_tokens", None)),
            _count(getattr(usage, "completion_tokens", None)),
        )


class LLMClient:
    """One transport's calls, with retries on transient errors, answer validation, usage counters and a pause
    after failures (`pause_min` doubling to `pause_max`, from the `free_failures`+1-th failure in a row)."""

    def __init__(
        self,
        config: LLMConfig,
        sleep: Callable[[float], None] = time.sleep,
        transport: Transport | None = None,
        hourly: HourlyBudget | None = None,
        pause_min: float = 30.0,
        pause_max: float = 600.0,
        free_failures: int = 0,
    ) -> None:
        self.config = config
        self._sleep = sleep
        self.transport: Transport = transport if transport is not None else LiteLLMTransport(config)
        self.hourly = hourly
        self.usage = Usage()
        self._pause_min, self._pause_max, self._free = pause_min, pause_max, free_failures
        self._failures_in_row = 0
        self._paused_until = 0.0

    @property
    def name(self) -> str:
        return self.transport.name

    def paused(self) -> bool:
        return time.monotonic() < self._paused_until

    def available(self) -> bool:
        """Usable now: the transport is there, no pause after failures, calls left in the hour."""
        return not self.paused() and self.transport.available() and self.calls_left() > 0

    def calls_left(self) -> int:
        return self.config.calls_per_batch if self.hourly is None else min(self.config.calls_per_batch, self.hourly.left())

    def failed(self) -> float:
        """A request failed (unreachable, refused, no answer): pause before the next; the pause in seconds."""
        self._failures_in_row += 1
        self.usage.failures += 1
        over = self._failures_in_row - self._free
        pause = 0.0 if over <= 0 else min(self._pause_min * 2 ** (over - 1), self._pause_max)
        self._paused_until = time.monotonic() + pause
        return pause

    def succeeded(self) -> None:
        self._failures_in_row = 0

    def chat(self, messages: list[dict[str, str]], budget: CallBudget) -> str:
        """One answer's text; transient errors are retried with backoff (each attempt spends budget)."""
        transient = self.transport.transient()
        last: BaseException | None = None
        for attempt in range(self.config.max_attempts):
            if self.hourly is not None and self.hourly.left() <= 0:
                raise BudgetExhausted(f"the hour's {self.hourly.calls} {self.name} calls are spent")
            budget.take()
            if self.hourly is not None:
                self.hourly.take()
            self.usage.calls += 1
            try:
                answer = self.transport.complete(messages)
                self.usage.prompt_tokens += answer.prompt_tokens or 0
                self.usage.completion_tokens += answer.completion_tokens or 0
                return answer.text
            except (BudgetExhausted, LLMError):
                raise
            except transient as exc:
                last = exc
                log.info("LLM call failed (%s), attempt %d of %d", _one_line(exc), attempt + 1, self.config.max_attempts)
                if attempt + 1 < self.config.max_attempts:
                    self._sleep(self.config.backoff * 2**attempt)
            except Exception as exc:  # auth, bad request, unknown model: retrying will not help
                raise LLMError(f"LLM {self.config.model} refused the request: {_one_line(exc)}") from None
        raise LLMError(f"LLM {self.config.model} unavailable after {self.config.max_attempts} attempts: {_one_line(last)}")

    def ask(self, messages: list[dict[str, str]], parse: Callable[[str], T], budget: CallBudget) -> T:
        """Ask until `parse` accepts the answer; a rejected answer is asked again with the reason."""
        conversation = list(messages)
        problem = ""
        for _ in range(self.config.max_attempts):
            text = self.chat(conversation, budget)
            try:
                return parse(text)
            except MalformedAnswer as exc:
                problem = str(exc)
                conversation = conversation + [
                    {"role": "assistant", "content": text[:4000]},
                    {"role": "user", "content": f"That answer was rejected: {problem}. Reply again with only the JSON object."},
                ]
        raise MalformedAnswer(f"rejected {self.config.max_attempts} answers, last because {problem}")


def _transient_errors(lib: Any) -> tuple[type[BaseException], ...]:
    names = (
        "Timeout", "APIConnectionError", "RateLimitError", "ServiceUnavailableError", "InternalServerError",
        "BadGatewayError",
    )
    found = tuple(getattr(lib.exceptions, n) for n in names if hasattr(lib.exceptions, n))
    return found + (TimeoutError, ConnectionError)


# --------------------------------------------------------------------------- prompts
EXTRACT_SYSTEM = """\
You keep the long-term memory of a software project for a coding agent. You are shown one new
note and the facts stored for the project now, each with an id. Decide how the note changes them.

Answer with one JSON object and nothing else: {"operations": [ ... ]} where each operation is one of
  {"op": "ADD", "subject": "...", "predicate": "...", "object": "...", "valid_from": "YYYY-MM-DD"}
     a durable fact the note states. subject: the thing it is about (the project name when it is about
     the project); predicate: a short snake_case attribute such as test_command, port, version, owner;
     object: the value. valid_from is optional (only when the note says when it became true).
  {"op": "UPDATE", "id": "<id of a shown fact>", "object": "<the new value>"}
     the note says the shown fact's attribute now has another value.
  {"op": "INVALIDATE", "id": "<id of a shown fact>", "reason": "..."}
     the note says the shown fact is no longer true, or never was, without giving a new value.
  {"op": "NONE"}
     the note states nothing durable: chatter, questions, plans, maybes, other projects, other people's setups.
Use only ids from the list shown. Do not ADD what is already shown with the same value; use UPDATE
when the note changes a shown fact. When unsure, answer {"operations": [{"op": "NONE"}]}."""

JUDGE_SYSTEM = """\
You decide whether two facts about a software project describe the same attribute of the same
thing, so that a new value of one replaces the other. Answer with one JSON object and nothing
else: {"same": true} or {"same": false}."""


def extract_messages(
    project: str, chunk: MemoryRecord, facts: Sequence[MemoryRecord], vocabulary: Sequence[tuple[str, str]] = ()
) -> list[dict[str, str]]:
    """The extraction request: the note, the nearest live facts with their ids, and the project's slot vocabulary
    (subject · predicate names in use), so a new value of a known thing is named the way it is already named."""
    lines = [
        f"{f.id} | {f.subject} | {f.predicate} | {f.object} | since {f.valid_at.date().isoformat()}" for f in facts
    ]
    user = (
        f"Project: {project}\nNote written: {chunk.valid_at.astimezone(UTC).isoformat()}\nNote:\n<<<\n{chunk.content}\n>>>\n\n"
        "Stored facts (id | subject | predicate | object | valid since):\n" + ("\n".join(lines) or "(none)")
    )
    if vocabulary:
        user += (
            "\n\nNames in use for this project's facts (subject · predicate); reuse them for a new value of the same "
            "thing:\n" + "\n".join(f"- {s} · {p}" for s, p in vocabulary)
        )
    return [{"role": "system", "content": EXTRACT_SYSTEM}, {"role": "user", "content": user}]


def judge_messages(new: MemoryRecord, existing: MemoryRecord) -> list[dict[str, str]]:
    user = (
        f"A: {existing.subject} · {existing.predicate} = {existing.object}\n"
        f"B: {new.subject} · {new.predicate} = {new.object}\nSame attribute of the same thing?"
    )
    return [{"role": "system", "content": JUDGE_SYSTEM}, {"role": "user", "content": user}]


# --------------------------------------------------------------------------- strict parsing (pure)
_FENCE = re.compile(r"^```(?:json)?\s*\n(?P<body>.*)\n```$", re.DOTALL)


def _json_object(text: str) -> dict[str, Any]:
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group("body").strip()
    try:
        data = json.loads(body)
    except ValueError as exc:
        raise MalformedAnswer(f"not JSON ({exc.args[0] if exc.args else exc})") from None
    if not isinstance(data, dict):
        raise MalformedAnswer("the answer must be a JSON object")
    return data


def _text(item: dict[str, Any], key: str, where: str, limit: int) -> str:
    value = item.get(key)
    if not isinstance(value, str) or not value.strip():
        raise MalformedAnswer(f"{where}.{key} must be a non-empty string")
    value = value.strip()
    if len(value) > limit or "\n" in value:
        raise MalformedAnswer(f"{where}.{key} must be one line of at most {limit} characters")
    return value


def parse_operations(text: str, shown_ids: set[str]) -> list[Operation]:
    """The operations of an extraction answer, all validated; raises `MalformedAnswer` on any defect."""
    data = _json_object(text)
    ops = data.get("operations")
    if not isinstance(ops, list) or not ops:
        raise MalformedAnswer('the answer must be {"operations": [...]} with at least one operation')
    if len(ops) > MAX_OPERATIONS:
        raise MalformedAnswer(f"at most {MAX_OPERATIONS} operations per answer")
    out: list[Operation] = []
    named: set[str] = set()
    for i, item in enumerate(ops):
        where = f"operations[{i}]"
        if not isinstance(item, dict):
            raise MalformedAnswer(f"{where} must be an object")
        op = item.get("op")
        if not isinstance(op, str) or op.upper() not in OPS:
            raise MalformedAnswer(f"{where}.op must be one of {', '.join(OPS)}")
        op = op.upper()
        if op == "NONE":
            continue
        if op == "ADD":
            valid_from = None
            if item.get("valid_from") not in (None, ""):
                raw = item["valid_from"]
                try:
                    valid_from = datetime.fromisoformat(str(raw).replace("Z", "+00:00"))
                except ValueError:
                    raise MalformedAnswer(f"{where}.valid_from must be an ISO date") from None
                if valid_from.tzinfo is None:
                    valid_from = valid_from.replace(tzinfo=UTC)
            out.append(
                Operation(
                    "ADD",
                    subject=_text(item, "subject", where, 500),
                    predicate=_text(item, "predicate", where, 200),
                    object=_text(item, "object", where, 4000),
                    valid_from=valid_from,
                )
            )
            continue
        memory_id = _text(item, "id", where, 64)
        if memory_id not in shown_ids:
            raise MalformedAnswer(f"{where}.id {memory_id} was not among the facts shown")
        if memory_id in named:
            raise MalformedAnswer(f"{where}.id {memory_id} appears in two operations")
        named.add(memory_id)
        if op == "UPDATE":
            out.append(Operation("UPDATE", id=memory_id, object=_text(item, "object", where, 4000)))
        else:
            reason = item.get("reason")
            out.append(Operation("INVALIDATE", id=memory_id, reason=reason.strip()[:500] if isinstance(reason, str) else None))
    return out


def parse_judgement(text: str) -> bool:
    data = _json_object(text)
    same = data.get("same")
    if not isinstance(same, bool):
        raise MalformedAnswer('the answer must be {"same": true} or {"same": false}')
    return same


def _one_line(exc: BaseException | None) -> str:
    if exc is None:
        return "no answer"
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:200] if text else ''}"


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _number(value: str | None, default: float) -> float:
    try:
        return float(value) if value else default
    except ValueError:
        return default
