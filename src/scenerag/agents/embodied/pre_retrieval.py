"""EmbodiedRAG pre-retrieval (paper §4.1): the LLM reads a task and the known attribute names and lists the
task-relevant entities (open-vocabulary names) with, per entity, the attributes the plan depends on.

Contract: ``PreRetriever.run(instruction)`` makes one JSON-schema-constrained call and returns a
:class:`PreRetrieval` of at most ``max_entities`` de-duplicated entities whose attribute names are all known
(unknown names are dropped, case is repaired); if the model names no usable entity the instruction itself
becomes the single query (``fallback=True``), so retrieval always has something to search for.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from scenerag.agents.embodied.errors import EmbodiedConfigError
from scenerag.llm.base import ChatModel, Message, Usage
from scenerag.retrieval.subgraph import EntityQuery

PRE_RETRIEVAL_SOURCE = "pre-retrieval"
MAX_NAME_CHARS = 40

SYSTEM_PROMPT = """You prepare the memory of a household robot before it plans a task. The robot's scene graph holds thousands of objects; you decide which ones the planner must see.
List the entities (object types, in a few plain words each) the robot will look for, act on, use as a tool or appliance, put things in or on, or open to reach something, and for each entity the attributes from the known list whose values the plan depends on. Prefer concrete object types ("stove burner", "frying pan") over vague words ("cooking things"). Name each entity once; list only attributes from the known list."""

EXAMPLES: tuple[tuple[str, dict[str, Any]], ...] = (
    (
        "Wash the dirty bowl.",
        {
            "entities": [
                {"name": "bowl", "attributes": ["isDirty", "isPickedUp"]},
                {"name": "sink", "attributes": []},
                {"name": "faucet", "attributes": ["isToggled"]},
            ]
        },
    ),
    (
        "Heat some soup in a pot.",
        {
            "entities": [
                {"name": "pot", "attributes": ["temperature", "isFilledWithLiquid"]},
                {"name": "stove burner", "attributes": ["isToggled"]},
                {"name": "stove knob", "attributes": ["isToggled"]},
            ]
        },
    ),
    (
        "Put a cold tomato on the dining table.",
        {
            "entities": [
                {"name": "tomato", "attributes": ["temperature", "isPickedUp"]},
                {"name": "fridge", "attributes": ["isOpen"]},
                {"name": "dining table", "attributes": []},
            ]
        },
    ),
)


@dataclass(frozen=True, slots=True)
class EntitySpec:
    """A pre-retrieved entity: its open-vocabulary name and the attributes the task needs of it."""

    name: str
    attributes: tuple[str, ...] = ()

    def query(self) -> EntityQuery:
        return EntityQuery(self.name, self.attributes, source=PRE_RETRIEVAL_SOURCE)


@dataclass
class PreRetrieval:
    """The entities of one task, the raw reply, provider token usage and wall time of the call."""

    instruction: str
    entities: list[EntitySpec]
    raw: str = ""
    usage: Usage = field(default_factory=Usage)
    seconds: float = 0.0
    fallback: bool = False

    def queries(self) -> list[EntityQuery]:
        return [e.query() for e in self.entities]

    def to_dict(self) -> dict[str, Any]:
        return {
            "instruction": self.instruction,
            "entities": [{"name": e.name, "attributes": list(e.attributes)} for e in self.entities],
            "fallback": self.fallback,
            "usage": {"input_tokens": self.usage.input_tokens, "output_tokens": self.usage.output_tokens},
            "seconds": round(self.seconds, 3),
        }


def pre_retrieval_schema(attribute_names: Sequence[str], max_entities: int) -> dict[str, Any]:
    """JSON schema of the reply: ``{"entities": [{"name": str, "attributes": [known names]}]}``."""
    return {
        "type": "object",
        "properties": {
            "entities": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "minLength": 1, "maxLength": MAX_NAME_CHARS},
                        "attributes": {
                            "type": "array",
                            "items": {"type": "string", "enum": list(attribute_names)},
                            "maxItems": 6,
                        },
                    },
                    "required": ["name", "attributes"],
                    "additionalProperties": False,
                },
                "minItems": 1,
                "maxItems": max_entities,
            }
        },
        "required": ["entities"],
        "additionalProperties": False,
    }


def clean_attributes(values: Any, known: Sequence[str]) -> tuple[str, ...]:
    """Known attribute names among ``values`` (case-insensitive, first spelling of each kept once)."""
    by_lower = {name.lower(): name for name in known}
    out: dict[str, None] = {}
    if isinstance(values, list):
        for value in values:
            if isinstance(value, str) and value.strip().lower() in by_lower:
                out.setdefault(by_lower[value.strip().lower()], None)
    return tuple(out)


def parse_entities(value: Any, known: Sequence[str], max_entities: int) -> list[EntitySpec]:
    """Validated entities of a parsed reply (see the module contract)."""
    items = value.get("entities") if isinstance(value, dict) else None
    merged: dict[str, tuple[str, list[str]]] = {}
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        name = item.get("name")
        if not isinstance(name, str) or not name.strip():
            continue
        name = " ".join(name.split())[:MAX_NAME_CHARS]
        key = name.lower()
        attributes = list(clean_attributes(item.get("attributes"), known))
        if key in merged:
            merged[key][1].extend(a for a in attributes if a not in merged[key][1])
        elif len(merged) < max_entities:
            merged[key] = (name, attributes)
    return [EntitySpec(name, tuple(attributes)) for name, attributes in merged.values()]


class PreRetriever:
    """Runs the pre-retrieval call of one task (see module contract)."""

    def __init__(
        self,
        model: ChatModel,
        attribute_names: Sequence[str],
        *,
        max_entities: int = 8,
        max_tokens: int = 320,
    ) -> None:
        if not attribute_names:
            raise EmbodiedConfigError("pre-retrieval needs the list of known attribute names")
        if max_entities < 1:
            raise EmbodiedConfigError(f"max_entities must be >= 1, got {max_entities}")
        self.model = model
        self.attribute_names = tuple(attribute_names)
        self.max_entities = max_entities
        self.max_tokens = max_tokens
        self.schema = pre_retrieval_schema(self.attribute_names, max_entities)

    def messages(self, instruction: str) -> list[Message]:
        known = ", ".join(self.attribute_names)
        messages = [Message.system(SYSTEM_PROMPT)]
        for task, answer in EXAMPLES:
            messages.append(Message.user(f"Known attributes: {known}\nTask: {task}"))
            messages.append(Message.assistant(json.dumps(answer, separators=(",", ":"))))
        messages.append(Message.user(f"Known attributes: {known}\nTask: {instruction}"))
        return messages

    def run(self, instruction: str) -> PreRetrieval:
        if not isinstance(instruction, str) or not instruction.strip():
            raise EmbodiedConfigError("pre-retrieval needs a non-empty task instruction")
        started = time.perf_counter()
        response = self.model.chat(
            self.messages(instruction), response_schema=self.schema, max_tokens=self.max_tokens
        )
        raw = response.message.content
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            value = None
        entities = parse_entities(value, self.attribute_names, self.max_entities)
        fallback = not entities
        if fallback:
            entities = [EntitySpec(instruction.strip())]
        return PreRetrieval(
            instruction=instruction,
            entities=entities,
            raw=raw,
            usage=response.usage,
            seconds=time.perf_counter() - started,
            fallback=fallback,
        )
