"""How the EmbodiedRAG planner gets its next action: from a chat model (a plain-text reply decoded under
the step's action grammar where the model enforces grammars, validated against the step's menu everywhere;
or native tool calls), or from a replayed plan that reports the token counts of the prompts it is shown (for
context-size measurements without model decisions).

Contract: ``decide(messages, menu)`` returns a :class:`Decision` for one step's
:class:`~scenerag.agents.embodied.menu.ActionMenu`; an unusable reply (no action, an action or object not on
the menu, a refused repeat) comes back as a decision with ``error`` set (the planner feeds it back), while
unrecoverable model errors (context overflow, unreachable endpoint, ...) raise ``LLMError``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from scenerag.agents.embodied.environment import DONE_ACTION, ActionSpec
from scenerag.agents.embodied.errors import EmbodiedConfigError
from scenerag.agents.embodied.menu import ActionMenu
from scenerag.llm.base import ChatModel, GenerationTimings, LLMError, Message, ToolSpec, Usage

FULL_GRAPH_ACTION = "getdiscoveredobjects"
"""The environment action (where it has one) that returns the full discovered scene graph."""
CHATML_OVERHEAD_TOKENS = 5
"""Template tokens around each message of a ChatML prompt (``<|im_start|>``, role, newline, ``<|im_end|>``,
newline), added to content token counts where a prompt is counted rather than sent."""
FATAL_ERROR_KINDS = frozenset(
    {"context_overflow", "unreachable", "auth", "missing_dependency", "model_not_found"}
)
ToolInterface = Literal["text", "native"]


@dataclass
class Decision:
    """One planner turn: the thought, the objects the thought is about (self-query feedback; empty when the
    reply names none), the action and its arguments, the call's usage, wall time and (local models) its
    split into prompt evaluation and generation; ``error`` is set (and the action possibly empty) when the
    reply could not be used."""

    thought: str
    action: str
    arguments: dict[str, str]
    usage: Usage = field(default_factory=Usage)
    seconds: float = 0.0
    raw: str = ""
    error: str | None = None
    objects: list[str] = field(default_factory=list)
    timings: GenerationTimings | None = None
    #: the call repeats a failure with nothing changed since (``error`` says so); it is not executed
    refused: bool = False


class Decider(Protocol):
    """Chooses the next action from the prompt messages (an LLM, or a replayed plan for measurements)."""

    def decide(self, messages: list[Message], menu: ActionMenu) -> Decision: ...


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


def _call_text(name: str, arguments: Mapping[str, object]) -> str:
    return f"Action: {name}({', '.join(str(v) for v in arguments.values())})"


class LLMDecider:
    """Asks a chat model. ``text`` (default): a plain-text reply ``Thought / [Objects] / Action``, decoded
    under the menu's GBNF grammar (models that ignore grammars are validated by ``menu.parse``); ``native``:
    the provider's tool calls, validated the same way. ``actions`` describe the environment's actions."""

    def __init__(
        self,
        model: ChatModel,
        actions: Sequence[ActionSpec],
        *,
        tool_interface: ToolInterface = "text",
        max_reply_tokens: int = 120,
    ) -> None:
        if tool_interface not in ("text", "native"):
            raise EmbodiedConfigError(f"tool_interface must be text or native, got {tool_interface!r}")
        if tool_interface == "native" and not model.supports_tools:
            raise EmbodiedConfigError(
                f"{model.name} has no native tool calls", hint="use tool_interface='text' (the default)"
            )
        self.model = model
        self.specs = {spec.name: spec for spec in actions}
        self.tool_interface = tool_interface
        self.max_reply_tokens = max_reply_tokens

    @property
    def native(self) -> bool:
        return self.tool_interface == "native"

    def decide(self, messages: list[Message], menu: ActionMenu) -> Decision:
        started = time.perf_counter()
        try:
            if self.native:
                response = self.model.chat(
                    messages, tools=tool_specs_for(menu.names, self.specs), max_tokens=self.max_reply_tokens
                )
            else:
                response = self.model.chat(messages, grammar=menu.grammar(), max_tokens=self.max_reply_tokens)
        except LLMError as exc:
            if exc.kind in FATAL_ERROR_KINDS:
                raise
            return Decision("", "", {}, seconds=time.perf_counter() - started, error=str(exc))
        seconds = time.perf_counter() - started
        message = response.message
        if self.native:
            if not message.tool_calls:
                return Decision(
                    message.content.strip(),
                    "",
                    {},
                    response.usage,
                    seconds,
                    message.content,
                    error="no action: call exactly one of the actions (done when the task is complete)",
                    timings=response.timings,
                )
            call = message.tool_calls[0]
            text = f"Thought: {message.content.strip()}\n{_call_text(call.name, call.arguments)}"
            raw = json.dumps({"thought": message.content, "tool": call.name, "arguments": call.arguments})
        else:
            text = raw = message.content
        parsed = menu.parse(text)
        return Decision(
            parsed.thought,
            parsed.action,
            parsed.arguments,
            response.usage,
            seconds,
            raw,
            error=parsed.error,
            objects=parsed.objects,
            refused=parsed.refused,
            timings=response.timings,
        )


def count_prompt_tokens(messages: Sequence[Message], count_tokens: Callable[[str], int]) -> int:
    """Tokens of a chat prompt: each message's content under the tokenizer plus the ChatML wrapper tokens,
    plus the assistant turn header the reply starts from."""
    return sum(count_tokens(m.content) + CHATML_OVERHEAD_TOKENS for m in messages) + 3


class ReplayDecider:
    """Replays a fixed action sequence (e.g. the oracle solver's plan, or a live episode's calls with their
    recorded ``replies``) and reports as usage the token counts of the exact prompts it is shown and of the
    text replies it stands for (``count_tokens``: a tokenizer). The menu is not consulted: the plan's
    actions run as given."""

    def __init__(
        self,
        plan: Sequence[tuple[str, Mapping[str, str]]],
        count_tokens: Callable[[str], int],
        *,
        replies: Sequence[tuple[str, Sequence[str]]] | None = None,
    ) -> None:
        self.plan = [(name, dict(arguments)) for name, arguments in plan]
        self.count_tokens = count_tokens
        self.position = 0
        #: per plan step, a recorded reply's (thought, objects): the objects feed a self-querying agent's
        #: retrieval as they did live, and the reply is counted with its Objects line
        self.replies = [(t, list(o)) for t, o in replies] if replies is not None else None

    def decide(self, messages: list[Message], menu: ActionMenu) -> Decision:
        started = time.perf_counter()
        index = self.position
        if self.position < len(self.plan):
            action, arguments = self.plan[self.position]
            self.position += 1
        else:
            action, arguments = DONE_ACTION, {}
        thought, objects = f"Following the plan: {action}.", []
        if self.replies is not None and index < len(self.replies):
            thought, objects = self.replies[index]
        named = f"Objects: {', '.join(objects) or 'none'}\n" if menu.objects_line else ""
        raw = f"Thought: {thought}\n{named}{_call_text(action, arguments)}"
        usage = Usage(count_prompt_tokens(messages, self.count_tokens), self.count_tokens(raw))
        return Decision(
            thought, action, arguments, usage, time.perf_counter() - started, raw, objects=list(objects)
        )
