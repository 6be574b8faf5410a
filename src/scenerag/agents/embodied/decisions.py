"""How the EmbodiedRAG planner gets its next action: from a chat model (native tool calls or a JSON-schema
action ``{"thought", "action", "argument"}``), or from a replayed plan that reports the token counts of the
prompts it is shown (for context-size measurements without model decisions).

Contract: ``decide(messages, actions)`` returns a :class:`Decision`; an unusable reply comes back as a
decision with ``error`` set (the planner feeds it back), while unrecoverable model errors (context overflow,
unreachable endpoint, ...) raise ``LLMError``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from scenerag.agents.embodied.environment import DONE_ACTION, ActionSpec
from scenerag.agents.embodied.errors import EmbodiedConfigError
from scenerag.llm.base import ChatModel, LLMError, Message, ToolSpec, Usage

FULL_GRAPH_ACTION = "getdiscoveredobjects"
"""The environment action (where it has one) that returns the full discovered scene graph."""
CHATML_OVERHEAD_TOKENS = 5
"""Template tokens around each message of a ChatML prompt (``<|im_start|>``, role, newline, ``<|im_end|>``,
newline), added to content token counts where a prompt is counted rather than sent."""
FATAL_ERROR_KINDS = frozenset(
    {"context_overflow", "unreachable", "auth", "missing_dependency", "model_not_found"}
)
ToolInterface = Literal["auto", "native", "json"]


@dataclass
class Decision:
    """One planner turn: the thought, the action and its arguments, the call's usage and wall time; ``error``
    is set (and the action empty) when the reply could not be used."""

    thought: str
    action: str
    arguments: dict[str, str]
    usage: Usage = field(default_factory=Usage)
    seconds: float = 0.0
    raw: str = ""
    error: str | None = None


class Decider(Protocol):
    """Chooses the next action from the prompt messages (an LLM, or a replayed plan for measurements)."""

    def decide(self, messages: list[Message], actions: Sequence[str]) -> Decision: ...


def action_schema(actions: Sequence[str], thought_chars: int) -> dict[str, Any]:
    """JSON schema of a JSON-mode reply: ``{"thought", "action": one of actions, "argument"}``."""
    return {
        "type": "object",
        "properties": {
            "thought": {"type": "string", "maxLength": thought_chars},
            "action": {"type": "string", "enum": list(actions)},
            "argument": {"type": "string", "maxLength": 60},
        },
        "required": ["thought", "action", "argument"],
        "additionalProperties": False,
    }


def action_arguments(spec: ActionSpec | None, argument: str) -> dict[str, str]:
    """The keyword arguments of the action ``spec`` describes given the single ``argument`` string of a
    JSON-mode reply (its first parameter; none for an unknown action or an empty argument)."""
    if spec is None or not spec.parameters or not argument.strip():
        return {}
    return {spec.parameters[0].name: argument.strip()}


def tool_specs_for(actions: Sequence[str], specs: Mapping[str, ActionSpec]) -> list[ToolSpec]:
    """Native tool specs of the actions named ``actions``, described by ``specs`` (``done`` included as a
    tool without arguments)."""
    tools: list[ToolSpec] = []
    for name in actions:
        if name == DONE_ACTION:
            tools.append(
                ToolSpec(
                    DONE_ACTION,
                    "Declare the task complete.",
                    {"type": "object", "properties": {}, "additionalProperties": False},
                )
            )
        elif name in specs:
            spec = specs[name]
            tools.append(ToolSpec(spec.name, spec.description, spec.json_schema()))
        else:
            raise EmbodiedConfigError(f"no action spec for {name!r}", hint="pass it in the decider's actions")
    return tools


class LLMDecider:
    """Asks a chat model: native tool calls when ``tool_interface`` allows (``auto``: where the model has
    them), else a grammar/JSON-schema action whose thought is at most ``thought_chars`` long. ``actions``
    describe the environment actions it may be offered (tool specs, argument names)."""

    def __init__(
        self,
        model: ChatModel,
        actions: Sequence[ActionSpec],
        *,
        tool_interface: ToolInterface = "auto",
        max_reply_tokens: int = 200,
        thought_chars: int = 200,
    ) -> None:
        if tool_interface not in ("auto", "native", "json"):
            raise EmbodiedConfigError(f"tool_interface must be auto, native or json, got {tool_interface!r}")
        self.model = model
        self.specs = {spec.name: spec for spec in actions}
        self.tool_interface = tool_interface
        self.max_reply_tokens = max_reply_tokens
        self.thought_chars = thought_chars

    @property
    def native(self) -> bool:
        iface = self.tool_interface
        return iface == "native" or (iface == "auto" and bool(self.model.supports_tools))

    def decide(self, messages: list[Message], actions: Sequence[str]) -> Decision:
        started = time.perf_counter()
        try:
            if self.native:
                response = self.model.chat(
                    messages, tools=tool_specs_for(actions, self.specs), max_tokens=self.max_reply_tokens
                )
            else:
                response = self.model.chat(
                    messages,
                    response_schema=action_schema(actions, self.thought_chars),
                    max_tokens=self.max_reply_tokens,
                )
        except LLMError as exc:
            if exc.kind in FATAL_ERROR_KINDS:
                raise
            return Decision("", "", {}, seconds=time.perf_counter() - started, error=str(exc))
        seconds = time.perf_counter() - started
        message = response.message
        if self.native:
            if not message.tool_calls:
                return Decision(
                    message.content,
                    "",
                    {},
                    response.usage,
                    seconds,
                    message.content,
                    error="no action: call exactly one of the actions (done when the task is complete)",
                )
            call = message.tool_calls[0]
            arguments = {k: v for k, v in call.arguments.items() if isinstance(v, str)}
            raw = json.dumps({"thought": message.content, "tool": call.name, "arguments": call.arguments})
            return Decision(message.content.strip(), call.name, arguments, response.usage, seconds, raw)
        try:
            value = json.loads(message.content)
        except json.JSONDecodeError as exc:
            return Decision(
                "", "", {}, response.usage, seconds, message.content, error=f"reply is not JSON: {exc}"
            )
        if not isinstance(value, dict) or not isinstance(value.get("action"), str):
            return Decision(
                "",
                "",
                {},
                response.usage,
                seconds,
                message.content,
                error='reply must be {"thought": ..., "action": ..., "argument": ...}',
            )
        action = value["action"].strip().lower()
        argument = value.get("argument")
        return Decision(
            str(value.get("thought", "")).strip(),
            action,
            action_arguments(self.specs.get(action), argument if isinstance(argument, str) else ""),
            response.usage,
            seconds,
            message.content,
        )


def count_prompt_tokens(messages: Sequence[Message], count_tokens: Callable[[str], int]) -> int:
    """Tokens of a chat prompt: each message's content under the tokenizer plus the ChatML wrapper tokens,
    plus the assistant turn header the reply starts from."""
    return sum(count_tokens(m.content) + CHATML_OVERHEAD_TOKENS for m in messages) + 3


class ReplayDecider:
    """Replays a fixed action sequence (e.g. the oracle solver's plan) and reports as usage the token counts
    of the exact prompts it is shown and of the JSON replies it stands for (``count_tokens``: a tokenizer)."""

    def __init__(
        self, plan: Sequence[tuple[str, Mapping[str, str]]], count_tokens: Callable[[str], int]
    ) -> None:
        self.plan = [(name, dict(arguments)) for name, arguments in plan]
        self.count_tokens = count_tokens
        self.position = 0

    def decide(self, messages: list[Message], actions: Sequence[str]) -> Decision:
        started = time.perf_counter()
        if self.position < len(self.plan):
            action, arguments = self.plan[self.position]
            self.position += 1
        else:
            action, arguments = DONE_ACTION, {}
        thought = f"Following the plan: {action}."
        raw = json.dumps(
            {"thought": thought, "action": action, "argument": next(iter(arguments.values()), "")},
            separators=(",", ":"),
        )
        usage = Usage(count_prompt_tokens(messages, self.count_tokens), self.count_tokens(raw))
        return Decision(thought, action, arguments, usage, time.perf_counter() - started, raw)
