"""Claude models through the official ``anthropic`` SDK (imported lazily): the Messages API.

System turns become the ``system`` parameter; assistant tool calls become ``tool_use`` blocks and ``tool``
turns ``tool_result`` blocks of a user turn (consecutive same-role turns are merged, as the API requires).
A ``response_schema`` is enforced by a forced call of a reply tool whose input schema is that schema; its
input comes back as the JSON content. 429/5xx/529/connection failures are retried here with bounded
backoff honouring ``Retry-After`` (the SDK's own retries are off). ``seed`` is not supported by the API.

``temperature`` is sent (default 0, as every scenerag call runs) as a request-body field, since the SDK
(2.x) has no parameter for it, except where the request cannot take it: with extended thinking in
``extra_body`` (the API then allows only 1) or with a ``temperature`` of its own in ``extra_body``. Newer
models reject the parameter outright (400 "`temperature` is deprecated for this model"); on that answer the
call is repeated once without it and this model instance stops sending it (``send_temperature=False``
skips it from the start).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from scenerag.llm.base import (
    ChatResponse,
    LLMError,
    Message,
    RetryPolicy,
    ToolCall,
    ToolSpec,
    Usage,
    call_with_retries,
    estimate_tokens,
    http_status_error,
    parse_json_reply,
    parse_retry_after,
)

ANTHROPIC_BASE_URL = "https://api.anthropic.com"
DEFAULT_TIMEOUT_S = 120.0
DEFAULT_MAX_TOKENS = 4096
DEFAULT_CONTEXT_WINDOW = 200_000
INSTALL_COMMAND = "pip install 'scenerag[anthropic]'"
REPLY_TOOL = "structured_reply"
"""Name of the tool whose forced call carries a schema-constrained reply."""
_WRAPPED_KEY = "value"

_STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
    "model_context_window_exceeded": "length",
    "refusal": "content_filter",
}
_OVERFLOW_MARKERS = ("prompt is too long", "context window", "context length", "too many tokens")
_TEMPERATURE_REFUSALS = ("deprecated", "not supported", "unsupported", "may only be set to 1")


def _object_schema(schema: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """Tool input schemas must be objects: wrap any other schema as ``{"value": schema}``."""
    if schema.get("type") == "object":
        return schema, False
    return {"type": "object", "properties": {_WRAPPED_KEY: schema}, "required": [_WRAPPED_KEY]}, True


class AnthropicChatModel:
    """A Claude model over the Anthropic Messages API; ``name`` is ``anthropic:MODEL``."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        retry: RetryPolicy | None = None,
        context_window: int = DEFAULT_CONTEXT_WINDOW,
        default_max_tokens: int = DEFAULT_MAX_TOKENS,
        extra_body: dict[str, Any] | None = None,
        send_temperature: bool = True,
    ) -> None:
        if not model:
            raise LLMError(
                "bad_request",
                "no model name given for the Anthropic backend",
                hint="use a spec like 'anthropic:claude-sonnet-4-5'",
            )
        try:
            import anthropic
        except ImportError as exc:
            raise LLMError(
                "missing_dependency",
                "the 'anthropic' package is not installed",
                hint=f"run {INSTALL_COMMAND}",
            ) from exc
        self.model = model
        self.name = f"anthropic:{model}"
        self.base_url = (base_url or os.environ.get("ANTHROPIC_BASE_URL") or ANTHROPIC_BASE_URL).rstrip("/")
        key = api_key or os.environ.get("ANTHROPIC_API_KEY")
        if not key:
            host = urlsplit(self.base_url).hostname or ""
            if host.endswith("anthropic.com"):
                raise LLMError(
                    "auth",
                    f"no API key for {self.base_url} (model {model})",
                    hint="set ANTHROPIC_API_KEY or pass api_key=",
                )
            key = "not-needed"  # a proxy or test server that does not check keys
        self.supports_tools = True
        self.context_window = context_window
        self.default_max_tokens = default_max_tokens
        self.retry = retry or RetryPolicy()
        self.timeout_s = timeout_s
        self.extra_body = dict(extra_body or {})
        self.send_temperature = send_temperature
        self._client = anthropic.Anthropic(
            api_key=key, base_url=self.base_url, timeout=timeout_s, max_retries=0
        )

    def count_tokens(self, text: str) -> int:
        """Client-side estimate (:func:`scenerag.llm.base.estimate_tokens`): the API counter costs a call."""
        return estimate_tokens(text)

    # -- request building ---------------------------------------------------------------------------
    @staticmethod
    def _wire_messages(messages: Sequence[Message]) -> tuple[str, list[dict[str, Any]]]:
        """(system text, API messages with consecutive same-role turns merged)."""
        system: list[str] = []
        turns: list[dict[str, Any]] = []

        def add(role: str, blocks: list[dict[str, Any]]) -> None:
            if not blocks:
                return
            if turns and turns[-1]["role"] == role:
                turns[-1]["content"].extend(blocks)
            else:
                turns.append({"role": role, "content": blocks})

        for msg in messages:
            if msg.role == "system":
                system.append(msg.content)
            elif msg.role == "tool":
                add(
                    "user",
                    [
                        {
                            "type": "tool_result",
                            "tool_use_id": msg.tool_call_id or "",
                            "content": msg.content or "(empty result)",
                        }
                    ],
                )
            elif msg.role == "assistant":
                blocks: list[dict[str, Any]] = [{"type": "text", "text": msg.content}] if msg.content else []
                blocks += [
                    {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}
                    for c in msg.tool_calls
                ]
                add("assistant", blocks)
            else:
                add("user", [{"type": "text", "text": msg.content or " "}])
        return "\n\n".join(s for s in system if s), turns

    # -- error handling -----------------------------------------------------------------------------
    @staticmethod
    def _retry_decision(exc: BaseException) -> float | bool | None:
        import anthropic

        if isinstance(exc, anthropic.APITimeoutError):
            return False  # a slow generation would time out again
        if isinstance(exc, anthropic.APIConnectionError):
            return None
        retryable = isinstance(exc, anthropic.APIStatusError) and (
            exc.status_code in (408, 409, 429) or exc.status_code >= 500
        )
        return parse_retry_after(exc.response.headers) if retryable else False

    def _error(self, exc: BaseException) -> LLMError:
        import anthropic

        url = self.base_url
        if isinstance(exc, anthropic.APITimeoutError):
            return LLMError(
                "unreachable",
                f"no reply from {url} within {self.timeout_s:g} s (model {self.model})",
                hint="raise timeout_s, or lower max_tokens",
                model=self.name,
            )
        if isinstance(exc, anthropic.APIConnectionError):
            cause = exc.__cause__ or exc.__context__
            detail = f"{exc.message} {cause}" if cause else exc.message
            return LLMError(
                "unreachable",
                f"cannot reach the Anthropic API at {url} ({detail.strip()})",
                hint="check network access and ANTHROPIC_BASE_URL",
                model=self.name,
            )
        if not isinstance(exc, anthropic.APIStatusError):
            return LLMError("bad_response", f"{self.name}: {exc}", model=self.name)
        status = exc.status_code
        text = exc.api_message or str(exc.message)
        lowered = text.lower()
        if status == 404:
            return LLMError(
                "model_not_found",
                f"{url} does not serve model {self.model!r}: {text}",
                hint="check the model id (e.g. claude-sonnet-4-5)",
                model=self.name,
                status_code=status,
            )
        return http_status_error(
            status,
            text,
            url=url,
            model=self.model,
            name=self.name,
            key_env="ANTHROPIC_API_KEY",
            overflow=any(m in lowered for m in _OVERFLOW_MARKERS),
        )

    def _takes_temperature(self) -> bool:
        """Whether a request may carry ``temperature`` (see the module docstring)."""
        thinking = self.extra_body.get("thinking")
        thinking_on = isinstance(thinking, dict) and thinking.get("type") not in (None, "disabled")
        return self.send_temperature and not thinking_on and "temperature" not in self.extra_body

    @staticmethod
    def _refuses_temperature(exc: BaseException) -> bool:
        """A 400 that names ``temperature`` as deprecated or unsupported for the model."""
        import anthropic

        if not isinstance(exc, anthropic.BadRequestError):
            return False
        text = (exc.api_message or str(exc.message)).lower()
        return "temperature" in text and any(m in text for m in _TEMPERATURE_REFUSALS)

    # -- the call -----------------------------------------------------------------------------------
    def chat(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSpec] | None = None,
        response_schema: dict[str, Any] | None = None,
        max_tokens: int | None = None,
        temperature: float = 0.0,
        seed: int | None = 0,
        stop: Sequence[str] | None = None,
        grammar: str | None = None,
    ) -> ChatResponse:
        import anthropic

        start = time.perf_counter()
        system, turns = self._wire_messages(messages)
        wire_tools: list[dict[str, Any]] = [
            {
                "name": t.name,
                "description": t.description,
                "input_schema": t.parameters or {"type": "object", "properties": {}},
            }
            for t in tools or []
        ]
        kwargs: dict[str, Any] = {
            "model": self.model,
            "max_tokens": max_tokens or self.default_max_tokens,
            "messages": turns,
        }
        if system:
            kwargs["system"] = system
        stops = [t for t in stop or () if t.strip()]  # the API refuses whitespace-only stop sequences
        if stops and not tools and response_schema is None:
            kwargs["stop_sequences"] = stops
        wrapped = False
        if response_schema is not None:
            input_schema, wrapped = _object_schema(response_schema)
            wire_tools.append(
                {
                    "name": REPLY_TOOL,
                    "input_schema": input_schema,
                    "description": "Give your final reply; its input is the reply itself.",
                }
            )
            # Alone, the reply tool is forced; with other tools any tool call is forced and the reply tool
            # is the way to finish.
            kwargs["tool_choice"] = {"type": "tool", "name": REPLY_TOOL} if not tools else {"type": "any"}
        if wire_tools:
            kwargs["tools"] = wire_tools
        body = dict(self.extra_body)
        if self._takes_temperature():
            body["temperature"] = temperature  # a body field: the SDK (2.x) has no parameter for it
        if body:
            kwargs["extra_body"] = body

        def call() -> Any:
            return call_with_retries(
                lambda: self._client.messages.create(**kwargs),
                policy=self.retry,
                retry_after=self._retry_decision,
            )

        try:
            try:
                reply = call()
            except anthropic.BadRequestError as exc:
                ours = "temperature" in body and "temperature" not in self.extra_body
                if not (ours and self._refuses_temperature(exc)):
                    raise
                self.send_temperature = False  # this model does not take it: stop sending it
                del body["temperature"]  # the same dict as kwargs["extra_body"]
                if not body:
                    del kwargs["extra_body"]
                reply = call()
        except anthropic.AnthropicError as exc:
            raise self._error(exc) from exc
        return self._response(reply, response_schema=response_schema, wrapped=wrapped, start=start)

    def _response(
        self, reply: Any, *, response_schema: dict[str, Any] | None, wrapped: bool, start: float
    ) -> ChatResponse:
        texts: list[str] = []
        calls: list[ToolCall] = []
        structured: Any = None
        has_structured = False
        for block in reply.content or []:
            kind = getattr(block, "type", None)
            if kind == "text":
                texts.append(block.text)
            elif kind == "tool_use":
                arguments = block.input if isinstance(block.input, dict) else {}
                if response_schema is not None and block.name == REPLY_TOOL:
                    structured = arguments.get(_WRAPPED_KEY) if wrapped else arguments
                    has_structured = True
                else:
                    calls.append(ToolCall(block.id, block.name, arguments))
        finish = _STOP_REASONS.get(reply.stop_reason or "end_turn", reply.stop_reason or "stop")
        if has_structured:
            _, content = parse_json_reply(json.dumps(structured), response_schema, self.name)
            message = Message.assistant(content)
            finish = "stop" if finish == "tool_calls" else finish
        elif calls:
            message = Message.assistant("".join(texts), calls)
        elif response_schema is not None:
            # The forced reply tool was not called (e.g. cut off by max_tokens): the text must be the JSON.
            _, content = parse_json_reply("".join(texts), response_schema, self.name)
            message = Message.assistant(content)
        else:
            message = Message.assistant("".join(texts))
        usage = reply.usage
        input_tokens = (
            int(getattr(usage, "input_tokens", 0) or 0)
            + int(getattr(usage, "cache_creation_input_tokens", 0) or 0)
            + int(getattr(usage, "cache_read_input_tokens", 0) or 0)
        )
        return ChatResponse(
            message=message,
            usage=Usage(input_tokens, int(getattr(usage, "output_tokens", 0) or 0)),
            model=getattr(reply, "model", None) or self.model,
            finish_reason=finish,
            elapsed_s=time.perf_counter() - start,
        )
