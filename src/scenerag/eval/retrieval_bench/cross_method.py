"""Cross-method question answering: typed questions with answers in the built graph's symbols, every
method's agent on the same questions (success, tokens, time), and success per question type.
"""

from __future__ import annotations

import math
import random
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from scenerag.agents.result import AgentResult
from scenerag.eval.questions import Question
from scenerag.eval.retrieval_bench.ground_truth import STRUCTURE_CLASSES, floor_level, floor_phrase, plural
from scenerag.eval.retrieval_bench.scenes import (
    SMALL_SCENE,
    BenchmarkError,
    SceneSpec,
    bench_cache_dir,
    prepare_scene,
)
from scenerag.eval.runner import Record
from scenerag.graph import ontology as ont
from scenerag.graph.model import Node, SceneGraph
from scenerag.llm.base import ChatModel
from scenerag.retrieval.documents import label_text
from scenerag.retrieval.embeddings import Embedder

# -- cross-method question answering ----------------------------------------------------------------------------
SYNONYMS: dict[str, str] = {
    "sofa": "couch",
    "fridge": "refrigerator",
    "tv": "television",
    "trash_can": "garbage bin",
    "bathtub": "tub",
    "wardrobe": "closet",
    "nightstand": "bedside table",
    "monitor": "computer screen",
    "armchair": "easy chair",
    "painting": "picture on the wall",
    "washing_machine": "washer",
    "bookshelf": "bookcase",
    "dresser": "chest of drawers",
    "oven": "stove",
    "lamp": "light",
    "plant": "houseplant",
    "towel": "bath towel",
    "cabinet": "cupboard",
}
QUESTION_TYPES: tuple[str, ...] = (
    "lookup",
    "floor-room-object",
    "count",
    "synonym",
    "attribute",
    "room-of",
    "floor-of",
    "nearest",
)


def cross_method_questions(graph: SceneGraph, *, seed: int = 0, per_type: int = 2) -> list[Question]:
    """Typed questions about the built graph with answers in its symbols (``tags[0]`` is the type):
    lookup ("Which object is the oven in the kitchen?"), floor-room-object (a set, naming the floor),
    count, synonym ("couch" for a sofa), attribute (a single-word colour), room-of, floor-of, nearest.
    Only unambiguous draws are kept (the room type is unique on its floor, the class unique where asked)."""
    rng = random.Random(seed)
    rooms = sorted(graph.nodes(ont.ROOM), key=lambda n: n.symbol)
    floor_of_room = {}
    for room in rooms:
        parents = [p for p in graph.parents(room.symbol, ont.CONTAINS) if p.label == ont.FLOOR]
        floor_of_room[room.symbol] = parents[0] if parents else None
    members: dict[str, list[Node]] = {
        r.symbol: sorted(
            (
                c
                for c in graph.children(r.symbol)
                if c.label == ont.OBJECT and c.class_name not in STRUCTURE_CLASSES
            ),
            key=lambda n: n.symbol,
        )
        for r in rooms
    }
    type_count = Counter(r.class_name for r in rooms)
    all_objects = [o for ms in members.values() for o in ms]
    class_count = Counter(o.class_name for o in all_objects)
    pool: dict[str, list[Question]] = defaultdict(list)

    def add(kind: str, uid: str, text: str, solution: str) -> None:
        pool[kind].append(
            Question(uid=f"{kind}:{uid}", name=kind, question=text, solution=solution, tags=[kind])
        )

    for room in rooms:
        floor = floor_of_room[room.symbol]
        where = f"the {label_text(room.class_name)}"
        unique_type = type_count[room.class_name] == 1
        classes = Counter(o.class_name for o in members[room.symbol])
        for cls, n in sorted(classes.items()):
            objs = [o for o in members[room.symbol] if o.class_name == cls]
            name = label_text(cls)
            if unique_type and n == 1:
                add(
                    "lookup",
                    f"{room.symbol}:{cls}",
                    f"Which object is the {name} in {where}?",
                    objs[0].symbol,
                )
                if cls in SYNONYMS:
                    add(
                        "synonym",
                        f"{room.symbol}:{cls}",
                        f"Which object is the {SYNONYMS[cls]} in {where}?",
                        objs[0].symbol,
                    )
                color = str(objs[0].attributes.get("color", ""))
                if color and " " not in color.strip():
                    add(
                        "attribute",
                        f"{room.symbol}:{cls}",
                        f"What colour is the {name} in {where}?",
                        color.strip(),
                    )
                anchor = objs[0]
                dists = sorted(
                    (math.dist(anchor.position, o.position), o.symbol)
                    for o in members[room.symbol]
                    if o.symbol != anchor.symbol
                )
                if len(dists) >= 2 and dists[1][0] - dists[0][0] >= 0.3:
                    add(
                        "nearest",
                        f"{room.symbol}:{cls}",
                        f"Which object is closest to the {name} in {where}?",
                        dists[0][1],
                    )
            if unique_type:
                kind = "count" if n > 1 else "count-one"
                add(kind, f"{room.symbol}:{cls}", f"How many {plural(name)} are in {where}?", str(n))
            if not unique_type and floor is not None:
                same_floor = [
                    r for r in rooms if r.class_name == room.class_name and floor_of_room[r.symbol] is floor
                ]
                if len(same_floor) == 1:
                    add(
                        "floor-room-object",
                        f"{room.symbol}:{cls}",
                        f"Which {plural(name)} are in {where} on the {floor_phrase(floor_level(floor))}?",
                        "<" + ", ".join(o.symbol for o in objs) + ">",
                    )
    for cls, n in sorted(class_count.items()):
        if n != 1:
            continue
        obj = next(o for o in all_objects if o.class_name == cls)
        room = next(r for r in rooms if obj in members[r.symbol])
        add("room-of", cls, f"Which room is the {label_text(cls)} in?", room.symbol)
        floor = floor_of_room[room.symbol]
        if floor is not None:
            add("floor-of", cls, f"Which floor is the {label_text(cls)} on?", floor.symbol)
    if len(pool.get("count", [])) < per_type:  # counts of one only when too few rooms hold several of a class
        pool["count"] = pool.get("count", []) + pool.get("count-one", [])
    out: list[Question] = []
    for kind in QUESTION_TYPES:
        items = pool.get(kind, [])
        out.extend(sorted(rng.sample(items, min(per_type, len(items))), key=lambda q: q.uid))
    return out


def run_cross_method(
    agents: Mapping[str, Any],
    questions: Sequence[Question],
    *,
    model_name: str = "",
    progress: Callable[[str], None] | None = None,
) -> list[Record]:
    """Every agent on every question (agent by agent, so a local model reuses its cached prompt prefix)."""
    records: list[Record] = []
    for name, agent in agents.items():
        for i, q in enumerate(questions):
            result: AgentResult = agent.run(q.question, task=q.task, answer_type=q.answer_type())
            record = Record.from_result(name, model_name, q, result)
            records.append(record)
            if progress is not None:
                mark = "ok" if record.correct else "WRONG"
                progress(
                    f"{name} {i + 1}/{len(questions)} [{q.tags[0] if q.tags else '-'}] {mark} "
                    f"{result.answer!r} (want {q.solution}) {result.usage.input_tokens} in-tok {result.wall_s:.1f}s"
                )
    return records


def per_type_table(records: Sequence[Record]) -> tuple[list[str], dict[str, dict[str, tuple[int, int]]]]:
    """``(methods, {question type: {method: (correct, asked)}})``."""
    methods = list(dict.fromkeys(r.config for r in records))
    table: dict[str, dict[str, tuple[int, int]]] = defaultdict(dict)
    for r in records:
        kind = r.tags[0] if r.tags else "-"
        ok, n = table[kind].get(r.config, (0, 0))
        table[kind][r.config] = (ok + int(r.correct), n + 1)
    return methods, dict(table)


def format_per_type(records: Sequence[Record]) -> str:
    """Markdown: success per question type and method, and which method wins each type."""
    methods, table = per_type_table(records)
    lines = ["| type | " + " | ".join(methods) + " | best |", "|" + "---|" * (len(methods) + 2)]
    for kind in [k for k in QUESTION_TYPES if k in table] + sorted(
        k for k in table if k not in QUESTION_TYPES
    ):
        cells = []
        best_rate, best = -1.0, []
        for m in methods:
            ok, n = table[kind].get(m, (0, 0))
            cells.append(f"{ok}/{n}" if n else "–")
            rate = ok / n if n else -1.0
            if rate > best_rate:
                best_rate, best = rate, [m]
            elif rate == best_rate:
                best.append(m)
        lines.append(
            f"| {kind} | " + " | ".join(cells) + f" | {', '.join(best) if best_rate > 0 else 'none'} |"
        )
    return "\n".join(lines)


CROSS_METHODS: tuple[str, ...] = ("cypher", "hybrid-cypher", "keysg-rag", "subgraph-rag", "context")
STORE_METHODS: frozenset[str] = frozenset({"cypher", "hybrid-cypher"})


def cross_method_agents(
    methods: Sequence[str],
    model: ChatModel,
    graph: SceneGraph,
    store: Any,
    embedder: Embedder,
    index_path: str | Path,
    *,
    max_tool_calls: int = 4,
) -> dict[str, Any]:
    """One agent per method name of :data:`CROSS_METHODS`, all on the same model, graph and store:
    ``cypher`` (agentic, schema), ``hybrid-cypher`` (+ ``vector_search``), ``keysg-rag`` (hierarchical RAG,
    LLM decomposition), ``subgraph-rag`` (EmbodiedRAG-style) and ``context`` (the whole graph in the prompt,
    one correction allowed)."""
    from scenerag.agents import CypherAgent, CypherAgentConfig
    from scenerag.agents.baselines import ContextWindowAgent, ContextWindowConfig
    from scenerag.agents.hierarchical_rag import HierarchicalRAG
    from scenerag.agents.hybrid_cypher import HybridCypherAgent, HybridCypherConfig
    from scenerag.agents.subgraph_rag import SubgraphRAGAgent
    from scenerag.retrieval.hierarchical import HierarchicalIndex

    unknown = [m for m in methods if m not in CROSS_METHODS]
    if unknown:
        raise BenchmarkError(f"unknown method(s) {unknown}", hint=f"use {', '.join(CROSS_METHODS)}")
    agents: dict[str, Any] = {}
    for name in methods:
        if name == "cypher":
            agents[name] = CypherAgent(
                model, store, CypherAgentConfig(mode="agentic", max_tool_calls=max_tool_calls)
            )
        elif name == "hybrid-cypher":
            agents[name] = HybridCypherAgent.from_graph(
                model, store, graph, embedder, HybridCypherConfig(max_tool_calls=max_tool_calls)
            )
        elif name == "keysg-rag":
            agents[name] = HierarchicalRAG(
                model, HierarchicalIndex.open_or_build(graph, index_path, embedder)
            )
        elif name == "subgraph-rag":
            agents[name] = SubgraphRAGAgent(model, graph, embedder)
        else:
            agents[name] = ContextWindowAgent(
                model, graph, ContextWindowConfig(mode="agentic", max_corrections=1)
            )
    return agents


@dataclass(frozen=True, slots=True)
class CrossMethodConfig:
    """What :func:`run_cross_method_bench` runs: ``per_type`` questions of each of ``types`` on each scene,
    for every method of ``methods``."""

    scenes: tuple[SceneSpec, ...] = (SMALL_SCENE,)
    methods: tuple[str, ...] = CROSS_METHODS
    types: tuple[str, ...] = QUESTION_TYPES
    per_type: int = 1
    seed: int = 0
    max_tool_calls: int = 4

    def __post_init__(self) -> None:
        bad = [m for m in self.methods if m not in CROSS_METHODS]
        if bad or not self.methods:
            raise BenchmarkError(f"unknown or no method(s) {bad}", hint=f"use {', '.join(CROSS_METHODS)}")
        bad = [t for t in self.types if t not in QUESTION_TYPES]
        if bad or not self.types:
            raise BenchmarkError(
                f"unknown or no question type(s) {bad}", hint=f"use {', '.join(QUESTION_TYPES)}"
            )
        if self.per_type < 1:
            raise BenchmarkError(f"per_type must be >= 1, got {self.per_type}")
        if not self.scenes:
            raise BenchmarkError("the benchmark needs at least one scene")


@dataclass
class CrossMethodReport:
    """Records of every (method, question) run, with the scene each came from (``scenes[i]`` for
    ``records[i]``)."""

    config: CrossMethodConfig
    model: str
    records: list[Record] = field(default_factory=list)
    scenes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_text(self) -> str:
        from scenerag.eval.runner import markdown_table, summarize

        if not self.records:
            return "no cross-method runs"
        parts = [*self.notes, "", markdown_table(summarize(self.records)), "", "Success per question type:"]
        parts.append(format_per_type(self.records))
        return "\n".join(parts)

    def to_json(self) -> dict[str, Any]:
        from scenerag.eval.runner import summarize

        return {
            "config": asdict(self.config),
            "model": self.model,
            "notes": self.notes,
            "summary": summarize(self.records),
            "per_type": per_type_table(self.records)[1],
            "records": [{"scene": s, **asdict(r)} for s, r in zip(self.scenes, self.records, strict=True)],
        }


def run_cross_method_bench(
    config: CrossMethodConfig,
    model: ChatModel,
    embedder: Embedder,
    *,
    cache_dir: str | Path | None = None,
    progress: Callable[[str], None] | None = None,
    on_record: Callable[[str, Record], None] | None = None,
) -> CrossMethodReport:
    """Every method of ``config`` on the same questions of each scene (built and loaded into an embedded store
    under the cache); method by method, so a local model reuses its cached prompt prefix across questions.
    ``on_record(scene, record)`` is called as each run finishes."""
    from scenerag.retrieval.hierarchical import index_dir
    from scenerag.store import open_store

    say = progress or (lambda text: None)
    report = CrossMethodReport(config, model.name)
    for spec in config.scenes:
        scene = prepare_scene(spec, cache_dir, progress=say)
        graph = scene.graph
        questions = [
            q
            for q in cross_method_questions(graph, seed=config.seed, per_type=config.per_type)
            if q.tags and q.tags[0] in config.types
        ]
        report.notes.append(f"{spec.name}: {graph.summary()}; {len(questions)} questions; model {model.name}")
        say(report.notes[-1])
        for q in questions:
            say(f"  [{q.tags[0]}] {q.question} -> {q.solution}")
        root = Path(cache_dir) if cache_dir is not None else bench_cache_dir()
        store = None
        if STORE_METHODS & set(config.methods):  # only the Cypher agents query the database
            store = open_store(root / spec.key() / "db")
        try:
            if store is not None:
                store.load(graph)
            agents = cross_method_agents(
                config.methods,
                model,
                graph,
                store,
                embedder,
                index_dir(scene.build_dir),
                max_tool_calls=config.max_tool_calls,
            )
            if "context" in agents:
                tokens = agents["context"].prompt_tokens()
                report.notes.append(
                    f"{spec.name}: context-window prompt {tokens} tokens (model window {model.context_window})"
                )
                say(report.notes[-1])
            for name, agent in agents.items():
                for record in run_cross_method({name: agent}, questions, model_name=model.name, progress=say):
                    report.records.append(record)
                    report.scenes.append(spec.name)
                    if on_record is not None:
                        on_record(spec.name, record)
        finally:
            if store is not None:
                store.close()
    return report


__all__ = [
    "CROSS_METHODS",
    "QUESTION_TYPES",
    "STORE_METHODS",
    "SYNONYMS",
    "CrossMethodConfig",
    "CrossMethodReport",
    "cross_method_agents",
    "cross_method_questions",
    "format_per_type",
    "per_type_table",
    "run_cross_method",
    "run_cross_method_bench",
]
