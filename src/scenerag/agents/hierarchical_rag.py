"""``HierarchicalRAG``: KeySG's hierarchical multimodal retrieval-augmented generation (Werby et al., §III-E).

Contract: a query is decomposed into target floor, room, object and anchor objects (by the LLM with a
JSON-schema-constrained reply, or deterministically by :class:`RuleBasedDecomposer`), the
:class:`HierarchicalRetriever` selects the floors, rooms, candidate objects and keyframes top-down, and the
retrieved context bundle (floor and room summaries, keyframe descriptions, candidate objects with positions
and sizes) goes to the LLM. ``ground(query)`` returns the chosen object symbol — picked by the LLM among the
candidates (the grammar allows only their symbols), or, in the paper's "w/o RAG" variant
(``select_with_llm=False``), the retriever's best. ``run(question, task=...)`` answers a question (SLDP) or
grounds an instruction (PDDL) and returns an :class:`AgentResult`, like the other agents; the retrieval is
recorded as its one tool call.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Literal

from scenerag.agents import prompts
from scenerag.agents.base import RunState
from scenerag.agents.grounding import PddlGrounder
from scenerag.agents.result import AgentResult, Task, ToolRecord
from scenerag.agents.tool_agent import ToolAgent, answer_with_corrections, loads_object
from scenerag.errors import SceneRagError
from scenerag.graph.model import SceneGraph
from scenerag.lang.pddl_goal import HERACLES_DOMAIN, GoalDomain
from scenerag.llm.base import ChatModel, LLMError, Message, Usage
from scenerag.retrieval.documents import label_text
from scenerag.retrieval.embeddings import Embedder
from scenerag.retrieval.hierarchical import (
    HierarchicalIndex,
    HierarchicalRetriever,
    QueryDecomposition,
    RetrievalConfig,
    RetrievedContext,
    RuleBasedDecomposer,
    parse_floor_level,
)

Decomposition = Literal["llm", "rules"]
RETRIEVAL_TOOL = "hierarchical_retrieval"


class HierarchicalRAGError(SceneRagError):
    """A KeySG RAG agent that cannot be set up or run as asked (missing model, bad config)."""


# -- LLM query decomposition ------------------------------------------------------------------------------
DECOMPOSITION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "target_object": {"type": "string"},
        "target_room": {"type": "string"},
        "target_floor": {"type": "string"},
        "anchor_objects": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
        "relation": {"type": "string"},
    },
    "required": ["target_object", "target_room", "target_floor", "anchor_objects", "relation"],
    "additionalProperties": False,
}

DECOMPOSITION_PROMPT = (
    "You parse requests about a building's 3D scene graph for a retriever. Reply with JSON: target_object "
    "(the thing to find, with its colour/size words, in a few words; for a question the things it asks "
    'about), target_room (the room type it is in, as in the list, or ""), target_floor (the floor as '
    'written, e.g. "ground floor", "second floor", or ""), anchor_objects (other objects it is described '
    'relative to, else []) and relation (e.g. "next to", "on", or "").'
)

DECOMPOSITION_EXAMPLES: tuple[tuple[str, dict[str, Any]], ...] = (
    (
        "the toilet in the bathroom on the ground floor",
        {
            "target_object": "toilet",
            "target_room": "bathroom",
            "target_floor": "ground floor",
            "anchor_objects": [],
            "relation": "",
        },
    ),
    (
        "Find the red chair next to the table in the kitchen.",
        {
            "target_object": "red chair",
            "target_room": "kitchen",
            "target_floor": "",
            "anchor_objects": ["table"],
            "relation": "next to",
        },
    ),
    (
        "How many pillows are on the second floor?",
        {
            "target_object": "pillow",
            "target_room": "",
            "target_floor": "second floor",
            "anchor_objects": [],
            "relation": "",
        },
    ),
)


@dataclass
class DecompositionResult:
    """A decomposition with the LLM's raw reply, token usage, number of calls and wall time."""

    decomposition: QueryDecomposition
    raw: str = ""
    usage: Usage = field(default_factory=Usage)
    llm_calls: int = 0
    seconds: float = 0.0
    fallback: bool = False


class LLMDecomposer:
    """One JSON-schema-constrained call that parses a query into floor / room / object / anchors.

    The room vocabulary of the scene is given in the prompt; an empty ``target_object`` falls back to the
    rule-based parse (``fallback=True``); ``target_floor`` is also resolved to a storey index when it names
    one ("ground floor" -> 0).
    """

    def __init__(
        self,
        model: ChatModel,
        room_vocabulary: list[str],
        n_floors: int | None = None,
        *,
        max_tokens: int = 160,
    ) -> None:
        self.model = model
        self.rooms = sorted({label_text(r) for r in room_vocabulary if r})
        self.n_floors = n_floors
        self.max_tokens = max_tokens
        self.rules = RuleBasedDecomposer(room_vocabulary, n_floors)

    def messages(self, query: str) -> list[Message]:
        scene = f"Room types here: {', '.join(self.rooms) or 'unknown'}."
        if self.n_floors:
            scene += f" Floors: {self.n_floors} (ground floor = floor 0)."
        messages = [Message.system(f"{DECOMPOSITION_PROMPT}\n{scene}")]
        for example, reply in DECOMPOSITION_EXAMPLES:
            messages.append(Message.user(example))
            messages.append(Message.assistant(json.dumps(reply, separators=(",", ":"))))
        messages.append(Message.user(query))
        return messages

    def decompose(self, query: str) -> DecompositionResult:
        if not isinstance(query, str) or not query.strip():
            raise HierarchicalRAGError("cannot decompose an empty query")
        started = time.perf_counter()
        resp = self.model.chat(
            self.messages(query), response_schema=DECOMPOSITION_SCHEMA, max_tokens=self.max_tokens
        )
        raw = resp.message.content
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            value = {}
        value = value if isinstance(value, dict) else {}

        def text(key: str) -> str:
            item = value.get(key)
            return " ".join(item.split()) if isinstance(item, str) else ""

        target, room, floor, relation = (
            text("target_object"),
            text("target_room"),
            text("target_floor"),
            text("relation"),
        )
        anchors_raw = value.get("anchor_objects")
        anchors = tuple(
            dict.fromkeys(
                " ".join(a.split())
                for a in (anchors_raw if isinstance(anchors_raw, list) else [])
                if isinstance(a, str) and a.strip() and " ".join(a.split()).lower() != target.lower()
            )
        )
        fallback = not target
        if fallback:
            target = self.rules.decompose(query).target_object
        level = None
        if floor:
            if floor.isdigit():
                phrase = f"floor {floor}"
            elif any(w in floor.lower() for w in ("floor", "level", "storey", "story")):
                phrase = floor
            else:
                phrase = f"{floor} floor"
            level = parse_floor_level(phrase, self.n_floors)
        decomposition = QueryDecomposition(
            query=query.strip(),
            target_object=target,
            target_room=room or None,
            target_floor=floor or None,
            anchors=anchors,
            relation=relation or None,
            floor_level=level,
            source="llm",
        )
        return DecompositionResult(
            decomposition, raw, resp.usage, 1, time.perf_counter() - started, fallback=fallback
        )


# -- the agent -----------------------------------------------------------------------------------------------
@dataclass
class HierarchicalRAGConfig:
    """Settings of one KeySG RAG variant.

    ``decomposition``: ``llm`` (the paper) or ``rules`` (deterministic, no LLM call); ``select_with_llm``:
    the LLM picks the grounded object from the context (False: the retriever's best, the paper's "w/o RAG");
    ``max_*``: how much of the retrieved context goes into the prompt; ``*_chars``: text cut per item;
    ``selection_thought``: let the model write a short thought before its choice (slower on small models).
    """

    decomposition: Decomposition = "llm"
    select_with_llm: bool = True
    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig)
    max_rooms: int = 2
    max_objects: int = 6
    max_anchor_objects: int = 2
    max_keyframes: int = 2
    summary_chars: int = 160
    description_chars: int = 110
    max_reply_tokens: int = 256
    max_corrections: int = 1
    selection_thought: bool = False

    def __post_init__(self) -> None:
        if self.decomposition not in ("llm", "rules"):
            raise HierarchicalRAGError(f"decomposition must be 'llm' or 'rules', got {self.decomposition!r}")
        for name in ("max_rooms", "max_objects", "summary_chars", "description_chars", "max_reply_tokens"):
            if getattr(self, name) < 1:
                raise HierarchicalRAGError(
                    f"HierarchicalRAGConfig.{name} must be >= 1, got {getattr(self, name)}"
                )

    @property
    def name(self) -> str:
        return f"keysg-{'rag' if self.select_with_llm else 'embed'}-{self.decomposition}"


@dataclass
class GroundingResult:
    """The object a query refers to: ``symbol`` (None when nothing was found), ``ranked`` candidates with
    the chosen one first, the retrieved context, and the cost (tokens, LLM calls, seconds)."""

    query: str
    symbol: str | None
    ranked: list[str]
    context: RetrievedContext
    usage: Usage = field(default_factory=Usage)
    llm_calls: int = 0
    wall_s: float = 0.0
    retrieval_ms: float = 0.0
    raw: str = ""
    error: str | None = None

    @property
    def decomposition(self) -> QueryDecomposition:
        return self.context.decomposition


SELECTION_PROMPT = (
    "You ground a request in a robot's 3D scene graph: from the retrieved candidates pick the one object the "
    "request refers to. Use the rooms, floors, colours, sizes and the distances to the anchor objects."
)


def selection_schema(candidates: list[str], thought: bool) -> dict[str, Any]:
    """The selection reply: ``{"object": <one of candidates>}``, with a short ``thought`` first if asked."""
    properties: dict[str, Any] = {"object": {"type": "string", "enum": candidates}}
    if thought:
        properties = {"thought": {"type": "string"}, **properties}
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _fmt(values: tuple[float, ...] | None) -> str:
    return "?" if values is None else ", ".join(f"{v:.2f}" for v in values)


class HierarchicalRAG:
    """KeySG RAG over one scene graph (see the module docstring)."""

    def __init__(
        self,
        model: ChatModel | None,
        source: SceneGraph | HierarchicalIndex,
        config: HierarchicalRAGConfig | None = None,
        *,
        embedder: Embedder | None = None,
        index_path: str | None = None,
        grounder: PddlGrounder | None = None,
        domain: GoalDomain = HERACLES_DOMAIN,
    ) -> None:
        self.config = config or HierarchicalRAGConfig()
        if model is None and (self.config.decomposition == "llm" or self.config.select_with_llm):
            raise HierarchicalRAGError(
                f"{self.config.name} needs a chat model",
                hint="pass one, or use decomposition='rules' with select_with_llm=False for retrieval only",
            )
        self.model = model
        if isinstance(source, HierarchicalIndex):
            self.index = source
        elif isinstance(source, SceneGraph):
            if embedder is None:
                from scenerag.retrieval.embeddings import make_embedder

                embedder = make_embedder()
            if index_path is not None:
                self.index = HierarchicalIndex.open_or_build(source, index_path, embedder)
            else:
                self.index = HierarchicalIndex.build(source, embedder)
        else:
            raise HierarchicalRAGError(
                f"HierarchicalRAG needs a SceneGraph or a HierarchicalIndex, got {type(source).__name__}"
            )
        self.retriever = HierarchicalRetriever(self.index, self.config.retrieval)
        self.rules = RuleBasedDecomposer.for_index(self.index)
        self.decomposer = (
            LLMDecomposer(model, self.index.room_classes(), len(self.index.floor_levels()))
            if model is not None
            else None
        )
        self.grounder = grounder
        self.domain = domain

    @property
    def name(self) -> str:
        return self.config.name

    # -- pipeline steps -------------------------------------------------------------------------------------
    def decompose(self, query: str) -> DecompositionResult:
        """The query's decomposition by the configured method."""
        if self.config.decomposition == "llm":
            assert self.decomposer is not None
            return self.decomposer.decompose(query)
        started = time.perf_counter()
        return DecompositionResult(self.rules.decompose(query), seconds=time.perf_counter() - started)

    def retrieve(self, query: str | QueryDecomposition) -> RetrievedContext:
        """Top-down retrieval for a query (decomposed first) or a given decomposition."""
        decomposition = (
            query if isinstance(query, QueryDecomposition) else self.decompose(query).decomposition
        )
        return self.retriever.retrieve(decomposition)

    def context_text(self, context: RetrievedContext) -> str:
        """The context bundle as prompt text: floors and rooms with summaries, views (keyframe
        descriptions), candidate objects (symbol, room, floor, position, description or class/colour/size,
        distance to the nearest anchor) and the anchor objects' candidates not listed yet."""
        cfg = self.config
        records = self.index.records
        d = context.decomposition
        rooms = [r.symbol for r in context.rooms[: cfg.max_rooms]]
        floors = list(dict.fromkeys(records[r].floor for r in rooms if records[r].floor))
        lines = []
        for f in floors:
            rec = records[f]
            text = f": {_cut(rec.description, cfg.summary_chars)}" if rec.description else ""
            lines.append(f"Floor {f} (level {rec.level}){text}")
        for r in rooms:
            rec = records[r]
            text = f": {_cut(rec.description, cfg.summary_chars)}" if rec.description else ""
            lines.append(f"Room {r} ({label_text(rec.class_name)}, on {rec.floor or '?'}){text}")
        views = [k for k in context.keyframes if records[k.symbol].room in rooms][: cfg.max_keyframes]
        for k in views:
            rec = records[k.symbol]
            lines.append(f"View {k.symbol} in {rec.room}: {_cut(rec.description, cfg.description_chars)}")
        lines.append(f"Objects matching '{d.target_object}', best first:")
        listed = set()
        for c in context.objects[: cfg.max_objects]:
            lines.append(self._object_line(c.symbol, c.anchor, c.anchor_distance))
            listed.add(c.symbol)
        for text, hits in context.anchors.items():
            extra = [h.symbol for h in hits[: cfg.max_anchor_objects] if h.symbol not in listed]
            if extra:
                lines.append(f"Objects matching '{text}':")
                lines.extend(self._object_line(s) for s in extra)
                listed.update(extra)
        return "\n".join(lines)

    def _object_line(self, symbol: str, anchor: str | None = None, distance: float | None = None) -> str:
        rec = self.index.records[symbol]
        line = f"- {symbol} in {rec.room or '?'}/{rec.floor or '?'} at ({_fmt(rec.position)}): "
        if rec.description:
            line += _cut(rec.description, self.config.description_chars)
        else:
            colour = f"{rec.color} " if rec.color else ""
            line += f"{colour}{label_text(rec.class_name)} ({_fmt(rec.size)} m)"
        if anchor is not None and distance is not None:
            line += f" [{distance:.1f} m from {anchor}]"
        return line

    # -- grounding ----------------------------------------------------------------------------------------------
    def ground(self, query: str) -> GroundingResult:
        """The object ``query`` refers to (see the module docstring); model failures are recorded in
        ``error`` and the retriever's best is kept."""
        started = time.perf_counter()
        usage, calls = Usage(), 0
        error: str | None = None
        try:
            parsed = self.decompose(query)
        except LLMError as exc:
            parsed = DecompositionResult(self.rules.decompose(query), fallback=True)
            error = f"decomposition failed, rules used: {exc}"
        usage, calls = usage + parsed.usage, calls + parsed.llm_calls
        context = self.retriever.retrieve(parsed.decomposition)
        ranked = context.ranked_symbols
        symbol = ranked[0] if ranked else None
        raw = ""
        candidates = ranked[: self.config.max_objects]
        if self.config.select_with_llm and len(candidates) > 1:
            assert self.model is not None
            schema = selection_schema(candidates, self.config.selection_thought)
            reply = (
                '{"thought": "<one short sentence>", "object": "<symbol>"}'
                if self.config.selection_thought
                else '{"object": "<symbol>"}'
            )
            messages = [
                Message.system(f"{SELECTION_PROMPT} Reply with JSON {reply}."),
                Message.user(f"{self.context_text(context)}\n\nRequest: {query}"),
            ]
            try:
                resp = self.model.chat(
                    messages, response_schema=schema, max_tokens=self.config.max_reply_tokens
                )
                usage, calls = usage + resp.usage, calls + 1
                raw = resp.message.content
                chosen = loads_object(raw).get("object")
                if isinstance(chosen, str) and chosen in candidates:
                    symbol = chosen
                else:
                    error = (
                        f"the model chose {chosen!r}, not one of the candidates; the retriever's best is kept"
                    )
            except LLMError as exc:
                error = f"selection failed, the retriever's best is kept: {exc}"
        if symbol is not None:
            ranked = [symbol, *(s for s in ranked if s != symbol)]
        return GroundingResult(
            query=query,
            symbol=symbol,
            ranked=ranked,
            context=context,
            usage=usage,
            llm_calls=calls,
            wall_s=time.perf_counter() - started,
            retrieval_ms=context.total_ms,
            raw=raw,
            error=error,
        )

    # -- question answering / PDDL grounding ------------------------------------------------------------------
    def _rules(self, task: Task) -> str:
        return prompts.ANSWER_RULES_QA if task == "qa" else prompts.pddl_rules(self.domain.describe())

    def system_prompt(self, task: Task) -> str:
        return "\n\n".join(
            [
                "You answer questions about a robot's 3D scene graph (building -> floors -> rooms -> objects, "
                "and keyframe views) from the part of it retrieved for the question, given with the question.",
                self._rules(task) + ' Reply with JSON {"answer": ...}.',
            ]
        )

    def run(self, question: str, *, task: Task = "qa", answer_type: str | None = None) -> AgentResult:
        """Answer ``question`` (``qa``) or ground it to a PDDL goal (``pddl``) from the retrieved context."""
        if self.model is None:
            raise HierarchicalRAGError(f"{self.name} cannot answer questions without a chat model")
        start = time.perf_counter()
        state = RunState(AgentResult(self.name, question, task, None))
        try:
            parsed = self.decompose(question)
            state.result.usage = state.result.usage + parsed.usage
            state.result.llm_calls += parsed.llm_calls
            context = self.retriever.retrieve(parsed.decomposition)
            text = self.context_text(context)
            state.result.tools.append(
                ToolRecord(
                    RETRIEVAL_TOOL,
                    json.dumps(parsed.decomposition.to_dict(), separators=(",", ":")),
                    True,
                    rows=len(context.objects),
                    elapsed_ms=context.total_ms,
                    result_tokens=self.model.count_tokens(text),
                    symbols=context.symbols(),
                )
            )
            state.messages = [
                Message.system(self.system_prompt(task)),
                Message.user(f"{text}\n\n{ToolAgent.user_prompt(question, task, answer_type)}"),
            ]
            answer_with_corrections(
                self.model,
                state,
                task,
                self.grounder,
                max_reply_tokens=self.config.max_reply_tokens,
                max_corrections=self.config.max_corrections,
            )
        except LLMError as exc:
            state.result.error = str(exc)
        state.result.wall_s = time.perf_counter() - start
        return state.finish()


__all__ = [
    "DECOMPOSITION_SCHEMA",
    "DecompositionResult",
    "GroundingResult",
    "HierarchicalRAG",
    "HierarchicalRAGConfig",
    "HierarchicalRAGError",
    "LLMDecomposer",
    "selection_schema",
]
