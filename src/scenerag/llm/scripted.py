"""A chat model that replays a script, for unit tests of control flow (agents, retries, tool loops).

Each ``chat`` call consumes the next script entry: a string (assistant text; with a ``response_schema`` it
must be JSON satisfying the schema's top-level type/required keys), a dict or list (JSON-encoded text), a
``ToolCall`` or list of them, a ``Message``, a ``ChatResponse``, an ``LLMError`` (raised, to simulate
failures), or a callable ``(messages) -> any of these``. Every call is recorded in ``calls``. Token usage is
:func:`scenerag.llm.base.estimate_tokens` of the rendered prompt and reply. Running out raises
:class:`ScriptExhaustedError`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from scenerag.llm.base import (
    ChatResponse,
    LLMError,
    Message,
    ToolCall,
    ToolSpec,
    Usage,
    estimate_tokens,
    parse_json_reply,
)

ScriptReply = str | dict[str, Any] | list[Any] | ToolCall | Message | ChatResponse | LLMError
ScriptEntry = ScriptReply | Callable[[list[Message]], ScriptReply]


class ScriptExhaustedError(LLMError):
    """The scripted model was called more times than its script has entries."""


@dataclass
class ScriptedCall:
    """What one ``chat`` call received."""

    messages: list[Message]
    tools: list[ToolSpec] = field(default_factory=list)
    response_schema: dict[str, Any] | None = None
    max_tokens: int | None = None
    temperature: float = 0.0
    grammar: str | None = None


def render_for_count(messages: Sequence[Message]) -> str:
    """The text the token estimate is taken over: roles, contents and tool calls."""
    parts: list[str] = []
    for msg in messages:
        parts.append(f"{msg.role}: {msg.content}")
        parts.extend(f"{c.name}({json.dumps(c.arguments)})" for c in msg.tool_calls)
    return "\n".join(parts)


class ScriptedChatModel:
    """Replays ``script`` in order; ``calls`` records every request; ``remaining`` counts unused entries."""

    def __init__(
        self,
        script: Iterable[ScriptEntry] = (),
        *,
        name: str = "scripted",
        supports_tools: bool = True,
        context_window: int = 32_768,
    ) -> None:
        self.script: list[ScriptEntry] = list(script)
        self.name = name
        self.supports_tools = supports_tools
        self.context_window = context_window
        self.calls: list[ScriptedCall] = []
        self._position = 0
        self._call_ids = 0

    @property
    def remaining(self) -> int:
        return len(self.script) - self._position

    def extend(self, entries: Iterable[ScriptEntry]) -> None:
        self.script.extend(entries)

    def count_tokens(self, text: str) -> int:
        """:func:`scenerag.llm.base.estimate_tokens`."""
        return estimate_tokens(text)

    def _next_call_id(self) -> str:
        self._call_ids += 1
        return f"call_{self._call_ids}"

    def _to_message(self, reply: ScriptReply, response_schema: dict[str, Any] | None) -> Message:
        if isinstance(reply, Message):
            return reply
        if isinstance(reply, ToolCall):
            return Message.assistant("", [reply])
        if isinstance(reply, list) and reply and all(isinstance(c, ToolCall) for c in reply):
            return Message.assistant("", reply)
        if isinstance(reply, (dict, list)):
            return Message.assistant(json.dumps(reply))
        if isinstance(reply, str):
            if response_schema is not None:
                _, reply = parse_json_reply(reply, response_schema, self.name)
            return Message.assistant(reply)
        raise TypeError(
            f"{self.name}: unsupported script entry {type(reply).__name__} at position {self._position - 1}"
        )

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
        start = time.perf_counter()
        seen = list(messages)
        self.calls.append(
            ScriptedCall(seen, list(tools or []), response_schema, max_tokens, temperature, grammar)
        )
        if self._position >= len(self.script):
            last = seen[-1].content[:120] if seen else ""
            raise ScriptExhaustedError(
                "bad_response",
                f"{self.name}: script exhausted after {len(self.script)} replies (call {len(self.calls)}; "
                f"last message: {last!r})",
                hint="add entries to the script, or check that the code under test stops when it should",
                model=self.name,
            )
        entry = self.script[self._position]
        self._position += 1
        reply = entry(seen) if callable(entry) else entry
        if isinstance(reply, LLMError):
            raise reply
        if isinstance(reply, ChatResponse):
            return reply
        message = self._to_message(reply, response_schema)
        if stop and not message.tool_calls and response_schema is None:  # as a real model stops
            cut = min((i for i in (message.content.find(t) for t in stop if t) if i >= 0), default=-1)
            if cut >= 0:
                message.content = message.content[:cut]
        message.tool_calls = [
            ToolCall(c.id or self._next_call_id(), c.name, c.arguments) for c in message.tool_calls
        ]
        usage = Usage(estimate_tokens(render_for_count(seen)), estimate_tokens(render_for_count([message])))
        return ChatResponse(
            message=message,
            usage=usage,
            model=self.name,
            finish_reason="tool_calls" if message.tool_calls else "stop",
            elapsed_s=time.perf_counter() - start,
        )
