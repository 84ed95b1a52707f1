"""The sampling transport: the consolidator's extraction request, sent to the MCP client's own model.

Owns the MCP side of extraction by the user's model (issue 45): which client may be asked, the
session kept to ask it, and the `sampling/createMessage` request itself. What is asked, how the
answer is checked and applied, the hourly budget and the counters are the consolidator's
(consolidate/extract_llm.py, stage_llm.py): this is a second transport for the same request, beside
litellm's.

A client qualifies when it declared the `sampling` capability at `initialize` and speaks a protocol
that lets the server send it requests (the handshake versions; the 2026-07-28 protocol forbids
server-initiated requests and deprecates sampling). Each tool call of such a client hands its session
and the event loop to `SamplingBridge.capture`; the consolidator's thread then submits
`create_message` to that loop with `asyncio.run_coroutine_threadsafe` and waits at most
`CHRONOMEM_SAMPLING_TIMEOUT`. The request goes on the connection's own channel (not a tool call's),
as it is sent between calls. A client that errors, refuses, is gone or does not answer in time is
dropped (`available()` turns False) until its next tool call: the LLM stage then asks the next model
(litellm's, when configured) or leaves the chunk pending. Nothing here raises anything but
`LLMError` to the consolidator, and nothing waits longer than the timeout.

Token counts: MCP's `CreateMessageResult` has no usage field. When a client reports usage in the
result's `_meta` (`usage` with `inputTokens`/`outputTokens`, or `prompt_tokens`/`completion_tokens`),
it is counted; otherwise only calls are.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
import warnings
from collections.abc import Mapping
from typing import Any

from chronomem.consolidate.extract_llm import Completion, LLMError, SamplingConfig

log = logging.getLogger(__name__)

#: Extra wait of the consolidator's thread beyond the request's own timeout (the loop may be busy).
GRACE_SECONDS = 5.0


def can_sample(session: Any) -> bool:
    """Whether the client behind `session` declared sampling and may be sent requests by the server."""
    capabilities = getattr(session, "client_capabilities", None)
    if capabilities is None or getattr(capabilities, "sampling", None) is None:
        return False
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    return getattr(session, "protocol_version", None) not in MODERN_PROTOCOL_VERSIONS


def usage_of(meta: Mapping[str, Any] | None) -> tuple[int | None, int | None]:
    """(prompt, completion) tokens a sampling result's `_meta` reports, else None for each."""
    usage = (meta or {}).get("usage")
    if not isinstance(usage, Mapping):
        return None, None

    def count(*keys: str) -> int | None:
        for key in keys:
            value = usage.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                return value
        return None

    return count("inputTokens", "prompt_tokens", "input_tokens"), count("outputTokens", "completion_tokens", "output_tokens")


class SamplingBridge:
    """The consolidator's transport to the latest connected client that can sample (extract_llm.Transport)."""

    name = "sampling"

    def __init__(self, config: SamplingConfig) -> None:
        self.config = config
        self._lock = threading.Lock()
        self._session: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        #: The model the client said answered last (for logs).
        self.model: str | None = None

    # -- on the event loop ----------------------------------------------------------------
    def capture(self, context: Any) -> bool:
        """At a tool call: keep the caller's session when its client can sample. Never raises."""
        try:
            session = context.session
            if not can_sample(session):
                return False
            loop = asyncio.get_running_loop()
        except Exception:  # no request behind this call, no running loop: nothing to keep
            return False
        with self._lock:
            if self._session is None:
                log.info("the MCP client offers sampling: the consolidator may ask its model for facts")
            self._session, self._loop = session, loop
        return True

    # -- on the consolidator's thread ---------------------------------------------------------
    def available(self) -> bool:
        with self._lock:
            return self._session is not None and self._loop is not None and not self._loop.is_closed()

    def transient(self) -> tuple[type[BaseException], ...]:
        return ()  # a client that failed once is not asked again until its next call

    def drop(self, session: Any = None) -> None:
        """Forget the session (`session`: only if it is still the one kept)."""
        with self._lock:
            if session is None or self._session is session:
                self._session, self._loop = None, None

    def complete(self, messages: list[dict[str, str]]) -> Completion:
        """One answer of the client's model; `LLMError` when there is no client or it does not answer."""
        with self._lock:
            session, loop = self._session, self._loop
        if session is None or loop is None:
            raise LLMError("no connected MCP client offers sampling")
        system = "\n\n".join(m["content"] for m in messages if m["role"] == "system") or None
        turns = [m for m in messages if m["role"] != "system"]
        request = self._ask(session, system, turns)
        try:
            future = asyncio.run_coroutine_threadsafe(request, loop)
        except RuntimeError as exc:  # the loop is closed: the server is stopping
            request.close()
            self.drop(session)
            raise LLMError(f"the MCP client's session is gone ({exc})") from None
        try:
            result = future.result(timeout=self.config.timeout + GRACE_SECONDS)
        except (concurrent.futures.TimeoutError, TimeoutError):
            future.cancel()
            self.drop(session)
            raise LLMError(f"the MCP client did not answer sampling/createMessage within {self.config.timeout:.0f} s") from None
        except concurrent.futures.CancelledError:
            self.drop(session)
            raise LLMError("the MCP client's session closed while it was asked") from None
        except Exception as exc:  # refused (an error reply), disconnected, no back-channel, a malformed result
            self.drop(session)
            raise LLMError(f"the MCP client's model failed: {type(exc).__name__}: {_first_line(exc)}") from None
        self.model = getattr(result, "model", None)
        content = getattr(result, "content", None)
        blocks = content if isinstance(content, list) else [content]
        text = "".join(getattr(b, "text", "") for b in blocks if getattr(b, "type", None) == "text")
        prompt_tokens, completion_tokens = usage_of(getattr(result, "meta", None))
        return Completion(text, prompt_tokens, completion_tokens)

    async def _ask(self, session: Any, system: str | None, turns: list[dict[str, str]]) -> Any:
        import anyio
        from mcp.shared.exceptions import MCPDeprecationWarning
        from mcp_types import SamplingMessage, TextContent

        messages = [
            SamplingMessage(role="assistant" if m["role"] == "assistant" else "user",
                            content=TextContent(type="text", text=m["content"]))
            for m in turns
        ]
        with anyio.fail_after(self.config.timeout):
            with warnings.catch_warnings():
                # deprecated in the 2026-07-28 protocol only; the clients that offer it speak an older one
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                call = session.create_message(
                    messages, max_tokens=self.config.max_tokens, system_prompt=system, temperature=0.0,
                    include_context="none", metadata={"purpose": "chronomem fact extraction"},
                )
            return await call


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0][:200] if lines else ""
