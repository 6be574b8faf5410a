"""Chat models behind the OpenAI chat-completions API: OpenAI, vLLM, Ollama, llama.cpp server, LM Studio.

Uses the official ``openai`` SDK (imported lazily) with its own retries switched off: 429/5xx/connection
failures are retried here with bounded exponential backoff that honours ``Retry-After``. Structured replies
use ``response_format=json_schema``; a server that answers 400 to that is retried once with ``json_object``
plus the schema in the prompt, then with the schema in the prompt only, and the working mode is remembered.
With ``supports_tools=False`` (servers started without a tool parser) tool calls are emulated through the
JSON-schema-constrained action format of :func:`scenerag.llm.base.tool_action_schema`.
"""

from __future__ import annotations

import itertools
import json
import os
import time
from collections.abc import Sequence
from typing import Any, Literal
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
    is_strict_schema,
    parse_json_reply,
    parse_retry_after,
    parse_tool_action,
    schema_instructions,
    tool_action_history,
    tool_action_instructions,
    tool_action_schema,
)

OPENAI_BASE_URL = "https://api.openai.com/v1"
DEFAULT_TIMEOUT_S = 120.0
DEFAULT_CONTEXT_WINDOW = 8192
INSTALL_COMMAND = "pip install 'scenerag[openai]'"

JsonMode = Literal["json_schema", "json_object", "prompt"]
_JSON_MODES: tuple[JsonMode, ...] = ("json_schema", "json_object", "prompt")

# Context windows of OpenAI model families (longest prefix wins); other servers: pass context_window=.
_CONTEXT_WINDOWS: dict[str, int] = {
    "gpt-5": 400_000,
    "gpt-4.1": 1_047_576,
    "gpt-4o": 128_000,
    "gpt-4-turbo": 128_000,
    "gpt-4": 8_192,
    "gpt-3.5-turbo": 16_385,
    "o1": 200_000,
    "o3": 200_000,
    "o4": 200_000,
}
# Reasoning models on api.openai.com accept only the default temperature and no seed.
_REASONING_PREFIXES = ("o1", "o3", "o4", "gpt-5")
_FORMAT_MARKERS = ("response_format", "json", "schema", "format", "grammar", "structured")
_OVERFLOW_MARKERS = (
    "context_length_exceeded",
    "maximum context length",
    "context length",
    "too many tokens",
    "exceeds the context",
    "prompt is too long",
)


def default_context_window(model: str) -> int:
    best = ""
    for prefix in _CONTEXT_WINDOWS:
        if model.startswith(prefix) and len(prefix) > len(best):
            best = prefix
    return _CONTEXT_WINDOWS[best] if best else DEFAULT_CONTEXT_WINDOW


def resolve_base_url(base_url: str | None = None) -> str:
    """``base_url``, else ``$SCENERAG_OPENAI_BASE_URL``, else ``$OPENAI_BASE_URL``, else api.openai.com."""
    env = os.environ.get("SCENERAG_OPENAI_BASE_URL") or os.environ.get("OPENAI_BASE_URL")
    url = base_url or env or OPENAI_BASE_URL
    return url.rstrip("/")


def is_official_openai(base_url: str) -> bool:
    host = urlsplit(base_url).hostname or ""
    return host == "api.openai.com" or host.endswith(".openai.com")


class OpenAIChatModel:
    """A model served over the OpenAI chat-completions wire format; ``name`` is ``openai:MODEL``."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        retry: RetryPolicy | None = None,
        supports_tools: bool = True,
        context_window: int | None = None,
        json_mode: JsonMode = "json_schema",
        extra_body: dict[str, Any] | None = None,
    ) -> None:
        if not model:
            raise LLMError(
                "bad_request",
                "no model name given for the OpenAI-compatible backend",
                hint="use a spec like 'openai:gpt-4.1-mini' or 'openai:qwen2.5-coder:7b'",
            )
        try:
            import openai
        except ImportError as exc:
            raise LLMError(
                "missing_dependency", "the 'openai' package is not installed", hint=f"run {INSTALL_COMMAND}"
            ) from exc
        self.model = model
        self.name = f"openai:{model}"
        self.base_url = resolve_base_url(base_url)
        self.official = is_official_openai(self.base_url)
        key = api_key or os.environ.get("OPENAI_API_KEY")
        if not key:
            if self.official:
                raise LLMError(
                    "auth",
                    f"no API key for {self.base_url} (model {model})",
                    hint="set OPENAI_API_KEY, or point OPENAI_BASE_URL / SCENERAG_OPENAI_BASE_URL "
                    "at a local server that needs none (vLLM, Ollama, llama.cpp, LM Studio)",
                )
            key = "not-needed"  # local servers ignore the key, the SDK insists on one
        self.supports_tools = supports_tools
        self.context_window = context_window or default_context_window(model)
        self.retry = retry or RetryPolicy()
        self.timeout_s = timeout_s
        self.extra_body = dict(extra_body or {})
        self._json_mode: JsonMode = json_mode
        self._call_ids = itertools.count(1)
        self._client = openai.OpenAI(api_key=key, base_url=self.base_url, timeout=timeout_s, max_retries=0)

    @property
    def json_mode(self) -> JsonMode:
        """How structured replies are requested now (degrades after a server rejects a mode)."""
        return self._json_mode

    def count_tokens(self, text: str) -> int:
        """No tokenizer is available client-side: :func:`scenerag.llm.base.estimate_tokens`."""
        return estimate_tokens(text)

    # -- request building ---------------------------------------------------------------------------
    @staticmethod
    def _wire_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for msg in messages:
            if msg.role == "tool":
                out.append({"role": "tool", "tool_call_id": msg.tool_call_id or "", "content": msg.content})
            elif msg.role == "assistant" and msg.tool_calls:
                out.append(
                    {
                        "role": "assistant",
                        "content": msg.content or None,
                        "tool_calls": [
                            {
                                "id": c.id,
                                "type": "function",
                                "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
                            }
                            for c in msg.tool_calls
                        ],
                    }
                )
            else:
                out.append({"role": msg.role, "content": msg.content})
        return out

    @staticmethod
    def _with_instructions(messages: list[dict[str, Any]], text: str) -> list[dict[str, Any]]:
        """Append ``text`` to the first system message (or add one)."""
        out = [dict(m) for m in messages]
        if out and out[0]["role"] == "system":
            out[0]["content"] = f"{out[0]['content']}\n\n{text}"
        else:
            out.insert(0, {"role": "system", "content": text})
        return out

    def _request(
        self,
        wire: list[dict[str, Any]],
        *,
        tools: Sequence[ToolSpec] | None,
        schema: dict[str, Any] | None,
        mode: JsonMode,
        max_tokens: int | None,
        temperature: float,
        seed: int | None,
        stop: Sequence[str] | None = None,
    ) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"model": self.model}
        if stop and not tools and schema is None:
            kwargs["stop"] = list(stop)[:4]  # the API takes at most 4
        reasoning = self.official and self.model.startswith(_REASONING_PREFIXES)
        if not reasoning:
            kwargs["temperature"] = temperature
            if seed is not None:
                kwargs["seed"] = seed
        if max_tokens is not None:
            kwargs["max_completion_tokens" if self.official else "max_tokens"] = max_tokens
        if tools:
            kwargs["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters or {"type": "object", "properties": {}},
                    },
                }
                for t in tools
            ]
        if schema is not None:
            if mode == "json_schema":
                kwargs["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": "reply", "schema": schema, "strict": is_strict_schema(schema)},
                }
            else:
                wire = self._with_instructions(wire, schema_instructions(schema))
                if mode == "json_object":
                    kwargs["response_format"] = {"type": "json_object"}
        kwargs["messages"] = wire
        if self.extra_body:
            kwargs["extra_body"] = self.extra_body
        return kwargs

    # -- error handling -----------------------------------------------------------------------------
    @staticmethod
    def _retry_decision(exc: BaseException) -> float | bool | None:
        import openai

        if isinstance(exc, openai.APITimeoutError):
            return False  # a slow generation would time out again
        if isinstance(exc, openai.APIConnectionError):
            return None
        if isinstance(exc, openai.APIStatusError):
            if exc.status_code == 429 and exc.code == "insufficient_quota":
                return False
            if exc.status_code in (408, 409, 429) or exc.status_code >= 500:
                return parse_retry_after(exc.response.headers)
        return False

    def _error(self, exc: BaseException) -> LLMError:
        import openai

        url = self.base_url
        if isinstance(exc, openai.APITimeoutError):
            return LLMError(
                "unreachable",
                f"no reply from {url} within {self.timeout_s:g} s (model {self.model})",
                hint="raise timeout_s for slow (e.g. CPU) servers, or check that the server is healthy",
                model=self.name,
            )
        if isinstance(exc, openai.APIConnectionError):
            cause = exc.__cause__ or exc.__context__
            detail = f"{exc.message} {cause}" if cause else exc.message
            return LLMError(
                "unreachable",
                f"cannot reach the OpenAI-compatible endpoint {url} ({detail.strip()})",
                hint="check that the server is running and listening there, and that the base "
                "URL (OPENAI_BASE_URL / SCENERAG_OPENAI_BASE_URL) is right; it usually ends "
                "in /v1",
                model=self.name,
            )
        if not isinstance(exc, openai.APIStatusError):
            return LLMError("bad_response", f"{self.name} at {url}: {exc}", model=self.name)
        status = exc.status_code
        text = str(exc.message)
        lowered = text.lower()
        if status == 404:
            if "model" in lowered:
                return LLMError(
                    "model_not_found",
                    f"{url} does not serve model {self.model!r}: {text}",
                    hint=f"list the served models with GET {url}/models",
                    model=self.name,
                    status_code=status,
                )
            return LLMError(
                "bad_request",
                f"{url}/chat/completions was not found (HTTP 404): {text}",
                hint="check the base URL; OpenAI-compatible servers usually serve under /v1",
                model=self.name,
                status_code=status,
            )
        return http_status_error(
            status,
            text,
            url=url,
            model=self.model,
            name=self.name,
            key_env="OPENAI_API_KEY",
            overflow=any(m in lowered for m in _OVERFLOW_MARKERS) or exc.code == "context_length_exceeded",
            rate_hint=(
                "the account has no quota left; check billing"
                if exc.code == "insufficient_quota"
                else "rate limited after retries; slow down or raise the retry budget"
            ),
        )

    @staticmethod
    def _rejects_json_mode(exc: Any, error: LLMError, schema: dict[str, Any] | None, mode: JsonMode) -> bool:
        """A 400/422 about the structured-output request, so the next weaker mode is worth one try."""
        if schema is None or mode == "prompt" or exc.status_code not in (400, 422):
            return False
        if error.kind == "context_overflow":
            return False
        text = str(exc.message).lower()
        return any(word in text for word in _FORMAT_MARKERS)

    def _create(self, kwargs: dict[str, Any]) -> Any:
        return call_with_retries(
            lambda: self._client.chat.completions.create(**kwargs),
            policy=self.retry,
            retry_after=self._retry_decision,
        )

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
        import openai

        start = time.perf_counter()
        emulate_tools = bool(tools) and not self.supports_tools
        if emulate_tools:
            assert tools is not None
            wire = self._with_instructions(
                self._wire_messages(tool_action_history(messages)),
                tool_action_instructions(tools, response_schema),
            )
            schema: dict[str, Any] | None = tool_action_schema(tools, response_schema)
            native_tools: Sequence[ToolSpec] | None = None
        else:
            wire = self._wire_messages(messages)
            schema = response_schema
            native_tools = tools
        while True:
            mode = self._json_mode
            kwargs = self._request(
                wire,
                tools=native_tools,
                schema=schema,
                mode=mode,
                max_tokens=max_tokens,
                temperature=temperature,
                seed=seed,
                stop=stop,
            )
            try:
                completion = self._create(kwargs)
                break
            except openai.APIStatusError as exc:
                error = self._error(exc)
                if not self._rejects_json_mode(exc, error, schema, mode):
                    raise error from exc
                self._json_mode = _JSON_MODES[_JSON_MODES.index(mode) + 1]
            except openai.OpenAIError as exc:
                raise self._error(exc) from exc
        return self._response(
            completion,
            tools=tools,
            schema=schema,
            emulate_tools=emulate_tools,
            structured_answer=response_schema is not None,
            start=start,
        )

    def _response(
        self,
        completion: Any,
        *,
        tools: Sequence[ToolSpec] | None,
        schema: dict[str, Any] | None,
        emulate_tools: bool,
        structured_answer: bool,
        start: float,
    ) -> ChatResponse:
        if not getattr(completion, "choices", None):
            raise LLMError(
                "bad_response", f"{self.name} at {self.base_url} returned no choices", model=self.name
            )
        choice = completion.choices[0]
        raw = choice.message
        finish = choice.finish_reason or "stop"
        content = raw.content or ""
        calls: list[ToolCall] = []
        for call in raw.tool_calls or []:
            function = getattr(call, "function", None)
            if function is None:
                continue
            try:
                arguments = json.loads(function.arguments or "{}")
            except json.JSONDecodeError as exc:
                raise LLMError(
                    "bad_response",
                    f"{self.name} gave invalid JSON arguments for tool "
                    f"{function.name!r}: {function.arguments[:200]!r}",
                    model=self.name,
                ) from exc
            if not isinstance(arguments, dict):
                raise LLMError(
                    "bad_response",
                    f"{self.name} gave non-object arguments for tool {function.name!r}",
                    model=self.name,
                )
            calls.append(ToolCall(call.id or f"call_{next(self._call_ids)}", function.name, arguments))
        if calls:
            message = Message.assistant(content, calls)
        elif emulate_tools:
            if finish == "length":
                raise LLMError(
                    "bad_response",
                    f"{self.name} hit max_tokens before finishing its action",
                    hint="raise max_tokens",
                    model=self.name,
                )
            value, _ = parse_json_reply(content, None, self.name)
            assert tools is not None
            message, finish = parse_tool_action(
                value, tools, self.name, f"call_{next(self._call_ids)}", structured_answer=structured_answer
            )
        elif schema is not None:
            _, content = parse_json_reply(content, schema, self.name)
            message = Message.assistant(content)
        else:
            message = Message.assistant(content)
        usage = completion.usage
        return ChatResponse(
            message=message,
            usage=Usage(
                int(getattr(usage, "prompt_tokens", 0) or 0), int(getattr(usage, "completion_tokens", 0) or 0)
            ),
            model=completion.model or self.model,
            finish_reason=finish,
            elapsed_s=time.perf_counter() - start,
        )
