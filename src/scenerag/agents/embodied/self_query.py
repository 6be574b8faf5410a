"""EmbodiedRAG self-query feedback (paper §4.5): turn the planner's latest thought into structured entity
queries (an entity name, attribute conditions as a metadata filter, attributes to show) for the next step.

Contract: ``SelfQuerier.run(thought, task, graph)`` makes one JSON-schema-constrained call and returns a
:class:`SelfQuery` whose ``queries`` are :class:`~scenerag.retrieval.subgraph.EntityQuery` objects
(``source="self-query"``). Conditions may name only ``filterable`` attributes; their values are coerced to
the types the graph's nodes hold (``"true"`` → ``True``, ``"cold"`` → ``"Cold"``), unknown names dropped.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scenerag.agents.embodied.errors import EmbodiedConfigError
from scenerag.agents.embodied.pre_retrieval import MAX_NAME_CHARS, clean_attributes
from scenerag.graph import ontology as ont
from scenerag.graph.model import SceneGraph
from scenerag.llm.base import ChatModel, Message, Usage
from scenerag.retrieval.subgraph import EntityQuery

SELF_QUERY_SOURCE = "self-query"

SYSTEM_PROMPT = """You turn the latest thought of a household robot's planner into queries for its scene-graph memory, so that the next planning step shows the objects the thought is about.
For each object type the thought needs (to find, act on, put something in, or check): "entity" is the object type in plain words; "conditions" are attribute values the object must have, only when the thought asks for a particular state (a dirty mug: isDirty = true; an open drawer: isOpen = true); "attributes" are the attributes the next step needs to see. At most 3 queries. Reply {"queries": []} when the thought needs no object."""

EXAMPLE_THOUGHT = "The mug is dirty, so I need a faucet that is off to turn on and rinse it."
EXAMPLE_REPLY: dict[str, Any] = {
    "queries": [
        {"entity": "mug", "conditions": [{"attribute": "isDirty", "value": True}], "attributes": ["isDirty"]},
        {"entity": "faucet", "conditions": [], "attributes": ["isToggled"]},
    ]
}


@dataclass
class SelfQuery:
    """Queries derived from one thought, the raw reply, token usage and wall time of the call."""

    thought: str
    queries: list[EntityQuery]
    raw: str = ""
    usage: Usage = field(default_factory=Usage)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "thought": self.thought,
            "queries": [
                {"entity": q.text, "filter": dict(q.filter or {}), "attributes": list(q.attributes)}
                for q in self.queries
            ],
            "usage": {"input_tokens": self.usage.input_tokens, "output_tokens": self.usage.output_tokens},
            "seconds": round(self.seconds, 3),
        }


def self_query_schema(
    attribute_names: Sequence[str], filterable: Sequence[str], max_queries: int
) -> dict[str, Any]:
    """JSON schema of the reply: ``{"queries": [{"entity", "conditions": [{"attribute", "value"}], "attributes"}]}``."""
    return {
        "type": "object",
        "properties": {
            "queries": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "entity": {"type": "string", "minLength": 1, "maxLength": MAX_NAME_CHARS},
                        "conditions": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "properties": {
                                    "attribute": {"type": "string", "enum": list(filterable)},
                                    "value": {
                                        "anyOf": [
                                            {"type": "boolean"},
                                            {"type": "string", "maxLength": 24},
                                            {"type": "number"},
                                        ]
                                    },
                                },
                                "required": ["attribute", "value"],
                                "additionalProperties": False,
                            },
                            "maxItems": 3,
                        },
                        "attributes": {
                            "type": "array",
                            "items": {"type": "string", "enum": list(attribute_names)},
                            "maxItems": 6,
                        },
                    },
                    "required": ["entity", "conditions", "attributes"],
                    "additionalProperties": False,
                },
                "maxItems": max_queries,
            }
        },
        "required": ["queries"],
        "additionalProperties": False,
    }


@dataclass(frozen=True)
class AttributeVocabulary:
    """The Python types and string values each attribute takes on the nodes of a graph (for coercion)."""

    types: Mapping[str, frozenset[type]]
    strings: Mapping[str, frozenset[str]]

    @classmethod
    def from_graph(cls, graph: SceneGraph, labels: Iterable[str] = (ont.OBJECT,)) -> AttributeVocabulary:
        wanted = frozenset(labels)
        types: dict[str, set[type]] = {}
        strings: dict[str, set[str]] = {}
        for node in graph.nodes():
            if node.label not in wanted:
                continue
            for key, value in node.attributes.items():
                types.setdefault(key, set()).add(type(value))
                if isinstance(value, str):
                    strings.setdefault(key, set()).add(value)
        return cls({k: frozenset(v) for k, v in types.items()}, {k: frozenset(v) for k, v in strings.items()})

    def coerce(self, attribute: str, value: Any) -> Any:
        """``value`` in the type the attribute has in the graph (unchanged when no coercion applies)."""
        kinds = self.types.get(attribute, frozenset())
        if isinstance(value, str):
            text = value.strip()
            if bool in kinds and text.lower() in ("true", "false", "yes", "no"):
                return text.lower() in ("true", "yes")
            if (float in kinds or int in kinds) and _is_number(text):
                return float(text)
            for known in self.strings.get(attribute, ()):
                if known.lower() == text.lower():
                    return known
            return text
        if isinstance(value, bool) and bool not in kinds and str in kinds:
            return str(value).lower()
        return value


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def conditions_filter(
    conditions: Any, filterable: Sequence[str], vocabulary: AttributeVocabulary
) -> dict[str, Any] | None:
    """The metadata filter (``{"isDirty": True, ...}``) of a reply's conditions, or None when it has none."""
    by_lower = {name.lower(): name for name in filterable}
    out: dict[str, Any] = {}
    for condition in conditions if isinstance(conditions, list) else []:
        if not isinstance(condition, dict):
            continue
        name = condition.get("attribute")
        value = condition.get("value")
        if not isinstance(name, str) or name.strip().lower() not in by_lower:
            continue
        if not isinstance(value, (str, bool, int, float)):
            continue
        attribute = by_lower[name.strip().lower()]
        out[attribute] = vocabulary.coerce(attribute, value)
    return out or None


class SelfQuerier:
    """Runs the self-query call for one planner thought (see module contract)."""

    def __init__(
        self,
        model: ChatModel,
        attribute_names: Sequence[str],
        *,
        filterable: Sequence[str] | None = None,
        max_queries: int = 3,
        max_tokens: int = 256,
    ) -> None:
        if not attribute_names:
            raise EmbodiedConfigError("self-query needs the list of known attribute names")
        if max_queries < 1:
            raise EmbodiedConfigError(f"max_queries must be >= 1, got {max_queries}")
        self.model = model
        self.attribute_names = tuple(attribute_names)
        self.filterable = tuple(filterable) if filterable is not None else self.attribute_names
        unknown = [a for a in self.filterable if a not in self.attribute_names]
        if unknown:
            raise EmbodiedConfigError(f"filterable attributes are not known attribute names: {unknown}")
        self.max_queries = max_queries
        self.max_tokens = max_tokens
        self.schema = self_query_schema(self.attribute_names, self.filterable, max_queries)

    def messages(self, thought: str, task: str) -> list[Message]:
        known = ", ".join(self.attribute_names)
        conditions = ", ".join(self.filterable)
        head = f"Known attributes: {known}\nAttributes usable in conditions: {conditions}\n"
        return [
            Message.system(SYSTEM_PROMPT),
            Message.user(f"{head}Task: Clean the dirty mug.\nThought: {EXAMPLE_THOUGHT}"),
            Message.assistant(json.dumps(EXAMPLE_REPLY, separators=(",", ":"))),
            Message.user(f"{head}Task: {task}\nThought: {thought}"),
        ]

    def run(self, thought: str, task: str, graph: SceneGraph | None = None) -> SelfQuery:
        """Queries for ``thought`` (empty for an empty thought, without calling the model)."""
        if not thought.strip():
            return SelfQuery(thought, [])
        started = time.perf_counter()
        response = self.model.chat(
            self.messages(thought, task), response_schema=self.schema, max_tokens=self.max_tokens
        )
        raw = response.message.content
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            value = None
        vocabulary = (
            AttributeVocabulary.from_graph(graph) if graph is not None else AttributeVocabulary({}, {})
        )
        queries: list[EntityQuery] = []
        items = value.get("queries") if isinstance(value, dict) else None
        for item in items if isinstance(items, list) else []:
            if not isinstance(item, dict):
                continue
            entity = item.get("entity")
            if not isinstance(entity, str) or not entity.strip():
                continue
            queries.append(
                EntityQuery(
                    " ".join(entity.split())[:MAX_NAME_CHARS],
                    clean_attributes(item.get("attributes"), self.attribute_names),
                    conditions_filter(item.get("conditions"), self.filterable, vocabulary),
                    source=SELF_QUERY_SOURCE,
                )
            )
            if len(queries) >= self.max_queries:
                break
        return SelfQuery(thought, queries, raw, response.usage, time.perf_counter() - started)
