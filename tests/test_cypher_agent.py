"""Control flow of the Cypher agent, driven by a scripted model over the real embedded database.

The scripted model only replays replies; these tests check what the agent does with them (queries run,
errors fed back, limits, answer validation, grounding, token accounting) — not model quality.
"""

from __future__ import annotations

import json
from pathlib import Path

from conftest import hydra_store_fixture
from scenerag import SceneGraph
from scenerag.agents import ToolCallingCypherAgent, ToolCallingCypherConfig, summarize_rows
from scenerag.agents.tool_cypher_agent import ANSWER_ACTION_SCHEMA
from scenerag.llm import LLMError, Message, ScriptedChatModel, ToolCall
from scenerag.store import CypherStore, open_store
from scenerag.store.base import QueryResult

LOUNGE_SIGNS = "MATCH (r:Room {class: 'lounge'})-[:CONTAINS*]->(o:Object {class: 'sign'}) RETURN DISTINCT o.nodeSymbol AS s"


store = hydra_store_fixture("agent")


def act(action: str, text: str, thought: str = "t") -> str:
    return json.dumps({"thought": thought, "action": action, "input": text})


def lounge_signs(graph: SceneGraph) -> set[str]:
    out = set()
    for room in graph.nodes("Room"):
        if room.class_name != "lounge":
            continue
        for place in graph.children(room.symbol):
            out |= {o.symbol for o in graph.children(place.symbol) if o.class_name == "sign"}
    return out


def test_agentic_json_runs_query_and_answers(store: CypherStore, hydra_graph: SceneGraph) -> None:
    expected = lounge_signs(hydra_graph)
    answer = "<" + ", ".join(sorted(expected)) + ">"
    model = ScriptedChatModel([act("tool", LOUNGE_SIGNS), act("answer", answer)], supports_tools=False)
    result = ToolCallingCypherAgent(model, store).run("Which signs are in the lounge?", answer_type="set")
    assert result.answer == answer and result.error is None
    assert result.llm_calls == 2 and result.tool_calls == 1 and result.valid_tool_rate == 1.0
    assert result.tools[0].rows == len(expected)
    assert set(result.tools[0].symbols) == expected
    # the second call saw the rows of the first query
    seen = model.calls[1].messages[-1].content
    assert all(s in seen for s in expected)
    # the prompt carries the live schema, its containment warning, and a generated example
    system = model.calls[0].messages[0].content
    assert "Object nodes are NOT directly contained in Room nodes" in system
    assert "-[:CONTAINS*]->(o:Object {class: 'appliance'})" in system
    assert "The answer is a set" in model.calls[0].messages[1].content
    assert result.usage.input_tokens > 0 and result.usage.output_tokens > 0
    assert result.tool_tokens == result.tools[0].result_tokens > 0


def test_failed_query_error_goes_back_to_the_model(store: CypherStore) -> None:
    model = ScriptedChatModel(
        [
            act("tool", "MATCH (o:Objects) RETURN count(o) AS n"),
            act("tool", "MATCH (o:Object) RETURN count(o) AS n"),
            act("answer", "65"),
        ],
        supports_tools=False,
    )
    result = ToolCallingCypherAgent(model, store).run("How many objects are there?")
    feedback = model.calls[1].messages[-1].content
    assert "unknown node label 'Objects'" in feedback and "Object" in feedback
    assert [t.ok for t in result.tools] == [False, True]
    assert result.valid_tool_rate == 0.5
    assert result.answer == "65"


def test_writes_are_refused_and_reported(store: CypherStore) -> None:
    count = "MATCH (o:Object {class: 'bag'}) RETURN count(o) AS n"
    before = store.query(count).rows
    model = ScriptedChatModel(
        [act("tool", "MATCH (o:Object) SET o.class = 'bag' RETURN count(o)"), act("answer", "done")],
        supports_tools=False,
    )
    result = ToolCallingCypherAgent(model, store).run("Rename every object to bag.")
    assert "write_refused" in model.calls[1].messages[-1].content
    assert not result.tools[0].ok
    assert store.query(count).rows == before


def test_tool_call_limit_forces_an_answer(store: CypherStore) -> None:
    q = act("tool", "MATCH (r:Room) RETURN count(r) AS n")
    model = ScriptedChatModel([q, q, act("answer", "5")], supports_tools=False)
    result = ToolCallingCypherAgent(model, store, ToolCallingCypherConfig(max_tool_calls=2)).run(
        "How many rooms?"
    )
    assert result.tool_calls == 2 and result.answer == "5"
    assert model.calls[2].response_schema == ANSWER_ACTION_SCHEMA
    assert "no tool calls left" in model.calls[2].messages[-1].content


def test_invalid_sldp_answer_is_corrected(store: CypherStore) -> None:
    model = ScriptedChatModel([act("answer", "<R1, R2"), act("answer", "<R1, R2>")], supports_tools=False)
    result = ToolCallingCypherAgent(model, store).run("Which rooms?")
    assert "not valid SLDP" in model.calls[1].messages[-1].content
    assert result.answer == "<R1, R2>" and result.error is None


def test_correction_budget_is_bounded(store: CypherStore) -> None:
    bad = act("answer", "<unclosed")
    model = ScriptedChatModel([bad, bad, bad], supports_tools=False)
    result = ToolCallingCypherAgent(model, store, ToolCallingCypherConfig(max_corrections=2)).run(
        "Which rooms?"
    )
    assert model.remaining == 0 and result.llm_calls == 3
    assert result.error and "SLDP" in result.error


def test_native_tool_calls(store: CypherStore) -> None:
    model = ScriptedChatModel(
        [
            ToolCall("c1", "cypher_query", {"query": "MATCH (r:Room) RETURN r.nodeSymbol AS s ORDER BY s"}),
            Message.assistant("The rooms are <R1, R2, R3, R4, R5>"),
        ],
        supports_tools=True,
    )
    result = ToolCallingCypherAgent(model, store).run("List the rooms.")
    assert result.answer == "<R1, R2, R3, R4, R5>"
    assert model.calls[0].tools and model.calls[0].tools[0].name == "cypher_query"
    tool_msg = model.calls[1].messages[-1]
    assert tool_msg.role == "tool" and tool_msg.tool_call_id == "c1" and "R5" in tool_msg.content
    assert "Reply with one JSON object" not in model.calls[0].messages[0].content


def test_feedforward_query_then_refinement(store: CypherStore) -> None:
    model = ScriptedChatModel(
        [
            {"thought": "count rooms", "cypher": "MATCH (r:Room) RETURN count(r) AS n"},
            {"answer": "5"},
        ]
    )
    result = ToolCallingCypherAgent(model, store, ToolCallingCypherConfig(mode="feedforward")).run(
        "How many rooms are there?"
    )
    assert result.answer == "5" and result.tool_calls == 1 and result.llm_calls == 2
    refine = model.calls[1].messages[-1].content
    assert "MATCH (r:Room) RETURN count(r) AS n" in refine and '{"n":5}' in refine
    assert result.method == "cypher-tools-feedforward-schema"


def test_no_schema_variant_explores(store: CypherStore) -> None:
    model = ScriptedChatModel(
        [
            act("tool", "CALL db.labels() YIELD label RETURN label"),
            act("answer", "<Object, MeshPlace, Room>"),
        ],
        supports_tools=False,
    )
    result = ToolCallingCypherAgent(model, store, ToolCallingCypherConfig(with_schema=False)).run(
        "Which labels exist?"
    )
    system = model.calls[0].messages[0].content
    assert "Database schema" not in system and "explore" in system
    assert result.tools[0].ok and result.tools[0].rows == 3


def test_pddl_grounding_feedback(store: CypherStore, hydra_graph: SceneGraph) -> None:
    bike = next(o.symbol for o in hydra_graph.nodes("Object") if o.class_name == "bicycle")
    model = ScriptedChatModel(
        [
            act("answer", "(holding O99999)"),
            act("answer", "(at-place O3)"),
            act("answer", f"(holding {bike})"),
        ],
        supports_tools=False,
    )
    result = ToolCallingCypherAgent(model, store).run("Grab the bicycle.", task="pddl")
    first, second = model.calls[1].messages[-1].content, model.calls[2].messages[-1].content
    assert "O99999" in first
    assert "O3" in second and "place" in second.lower()
    assert result.answer == f"(holding {bike})" and result.error is None
    assert "holding" in model.calls[0].messages[0].content  # the domain is in the prompt


def test_llm_failure_is_reported_not_raised(store: CypherStore) -> None:
    model = ScriptedChatModel(
        [LLMError("unreachable", "cannot reach http://127.0.0.1:1/v1")], supports_tools=False
    )
    result = ToolCallingCypherAgent(model, store).run("How many rooms?")
    assert result.answer is None and result.error and "unreachable" in result.error


def test_summarize_rows_respects_budget() -> None:
    rows = [{"s": f"O{i}", "d": 1.23456789} for i in range(500)]
    text = summarize_rows(
        QueryResult(["s", "d"], rows, truncated=True, max_rows=500), 60, lambda t: len(t) // 4
    )
    lines = text.splitlines()
    assert 3 <= len(lines) < 30
    assert '"d":1.2346' in lines[0]
    assert "of 500+ rows shown" in lines[-1]
    full = summarize_rows(QueryResult(["s"], rows[:3], max_rows=10), 1000, lambda t: len(t) // 4)
    assert full.splitlines()[-1] == "(3 rows)"


def test_agent_runs_against_bolt_backend(bolt_uri: str, hydra_graph: SceneGraph, tmp_path: Path) -> None:
    store = open_store(bolt_uri)
    try:
        store.load(hydra_graph)
        model = ScriptedChatModel(
            [
                act(
                    "cypher",
                    "MATCH (r:Room {nodeSymbol: 'R1'})-[:CONTAINS*]->(o:Object) RETURN count(DISTINCT o) AS n",
                ),
                act("answer", "1"),
            ],
            supports_tools=False,
        )
        result = ToolCallingCypherAgent(model, store).run("How many objects in R1?")
        assert result.tools[0].ok and result.tools[0].rows == 1
    finally:
        store.close()


def test_hints_for_small_model_mistakes(store: CypherStore) -> None:
    """Classes written as labels, wrong case in values, repeated failing queries: each gets a precise hint."""
    model = ScriptedChatModel(
        [
            act("tool", "MATCH (s:Sign) RETURN s.nodeSymbol"),
            act("tool", "MATCH (s:Sign) RETURN s.nodeSymbol"),
            act("tool", "MATCH (r:Room {class: 'Lounge'}) RETURN r.nodeSymbol"),
            act("answer", "<R1>"),
        ],
        supports_tools=False,
    )
    ToolCallingCypherAgent(model, store, ToolCallingCypherConfig(auto_repair=False)).run(
        "Which signs are there?"
    )
    first = model.calls[1].messages[-1].content
    assert "'sign' is a value of Object.class" in first and "(n:Object {class: 'sign'})" in first
    assert "You already ran this exact input" in model.calls[2].messages[-1].content
    third = model.calls[3].messages[-1].content
    assert "(no rows)" in third and "did you mean 'lounge' (Room.class)" in third
    system = model.calls[0].messages[0].content
    assert "class: STRING (values: appliance, bag," in system
    assert "(r:Room {class: 'hallway'})-[:CONTAINS*]->(o:Object {class: 'appliance'})" in system


def test_auto_repair_fixes_class_labels_and_value_case(store: CypherStore, hydra_graph: SceneGraph) -> None:
    expected = lounge_signs(hydra_graph)
    model = ScriptedChatModel(
        [
            act(
                "tool",
                "MATCH (r:Room {nodeSymbol: 'Lounge'})-[:CONTAINS*]->(s:Sign) RETURN DISTINCT s.nodeSymbol",
            ),
            act("answer", "<" + ", ".join(expected) + ">"),
        ],
        supports_tools=False,
    )
    result = ToolCallingCypherAgent(model, store).run("Which signs are in the lounge?")
    record = result.tools[0]
    assert record.ok and set(record.symbols) == expected
    assert record.ran == (
        "MATCH (r:Room {class: 'lounge'})-[:CONTAINS*]->(s:Object {class: 'sign'}) RETURN DISTINCT s.nodeSymbol"
    )
    feedback = model.calls[1].messages[-1].content
    assert feedback.startswith("Result:\nAuto-corrected (") and "Sign is not a label" in feedback


def test_repair_leaves_valid_queries_alone(store: CypherStore) -> None:
    from scenerag.agents.query_repair import repair_query

    schema = store.schema()
    for q in [
        "MATCH (o:Object {class: 'sign'}) RETURN o.nodeSymbol",
        "MATCH (o:Object {nodeSymbol: 'O3'}) RETURN o",
        "MATCH (r:Room) WHERE r.class = 'hallway' RETURN count(r)",
        "MATCH (p:MeshPlace)-[:MESH_PLACE_CONNECTED*1..2]-(q) RETURN count(q)",
    ]:
        assert repair_query(q, schema) == (q, [])


def test_query_given_as_answer_is_run_as_a_query(store: CypherStore) -> None:
    model = ScriptedChatModel(
        [act("answer", "MATCH (r:Room) RETURN count(r) AS n"), act("answer", "5")], supports_tools=False
    )
    result = ToolCallingCypherAgent(model, store).run("How many rooms?")
    assert '{"n":5}' in model.calls[1].messages[-1].content
    assert result.answer == "5" and result.tool_calls == 1
    # with no tool calls left, a query as the answer is rejected instead
    model = ScriptedChatModel(
        [act("answer", "MATCH (r:Room) RETURN count(r)"), act("answer", "5")], supports_tools=False
    )
    result = ToolCallingCypherAgent(model, store, ToolCallingCypherConfig(max_tool_calls=0)).run(
        "How many rooms?"
    )
    assert "that is a Cypher query, not the answer" in model.calls[1].messages[-1].content
    assert result.answer == "5" and result.tool_calls == 0
