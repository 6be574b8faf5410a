"""The context-window and code-generation baselines, and the Python sandbox they rely on."""

from __future__ import annotations

import json

import pytest

from scenerag import SceneGraph
from scenerag.agents.baselines import CodeGenAgent, CodeGenConfig, ContextWindowAgent, serialize_graph
from scenerag.agents.python_sandbox import run_python
from scenerag.llm import ScriptedChatModel, ToolCall
from scenerag.sim.outdoor import generate_outdoor_graph


def test_serialize_graph_lists_every_node_with_parents_and_neighbours(hydra_graph: SceneGraph) -> None:
    text = serialize_graph(hydra_graph)
    lines = text.splitlines()
    assert sum(1 for line in lines if not line.endswith(":")) == hydra_graph.num_nodes
    obj = next(o for o in hydra_graph.nodes("Object") if len(hydra_graph.parents(o.symbol)) == 2)
    line = next(line for line in lines if line.startswith(obj.symbol + " "))
    assert all(p.symbol in line for p in hydra_graph.parents(obj.symbol))
    assert obj.class_name in line
    assert lines[0].startswith("Room nodes")  # top layer first


def test_context_window_answers_from_the_prompt(hydra_graph: SceneGraph) -> None:
    model = ScriptedChatModel([{"answer": "<R1, R2>"}])
    agent = ContextWindowAgent(model, hydra_graph)
    result = agent.run("Which rooms?")
    assert result.answer == "<R1, R2>" and result.error is None
    assert "O0 " in model.calls[0].messages[0].content
    assert agent.prompt_tokens() > 1000


def test_context_window_reports_overflow_instead_of_calling() -> None:
    big = generate_outdoor_graph(n_places=3000, n_regions=20, n_objects=50)
    model = ScriptedChatModel([], context_window=8192)
    result = ContextWindowAgent(model, big).run("How many trees?")
    assert result.error and "context_overflow" in result.error and "8192" in result.error
    assert model.calls == []


def test_sandbox_runs_code_with_graph(hydra_graph: SceneGraph) -> None:
    res = run_python("result = sum(1 for _ in graph.nodes('Object'))", hydra_graph)
    assert res.ok and res.output == "result = 65"
    res = run_python("print(sorted({n.class_name for n in graph.nodes('Room')}))", hydra_graph)
    assert res.ok and "hallway" in res.output


@pytest.mark.parametrize(
    ("code", "needle"),
    [
        ("while True: pass", "timeout"),
        ("import os\nresult = os.listdir('/')", "not allowed"),
        ("open('/etc/passwd').read()", "NameError"),
        ("1 / 0", "ZeroDivisionError"),
    ],
)
def test_sandbox_contains_failures(hydra_graph: SceneGraph, code: str, needle: str) -> None:
    res = run_python(code, hydra_graph, timeout_s=2.0)
    assert not res.ok and res.error and needle in res.error


def test_codegen_agentic_loop(hydra_graph: SceneGraph) -> None:
    def act(action: str, text: str) -> str:
        return json.dumps({"thought": "t", "action": action, "input": text})

    model = ScriptedChatModel(
        [
            act("tool", "result = len(list(graph.nodes('Rooms')))"),
            act("tool", "result = len(list(graph.nodes('Room')))"),
            act("answer", "5"),
        ],
        supports_tools=False,
    )
    result = CodeGenAgent(model, hydra_graph).run("How many rooms?")
    assert [t.ok for t in result.tools] == [True, True]
    assert "result = 0" in model.calls[1].messages[-1].content
    assert "result = 5" in model.calls[2].messages[-1].content
    assert result.answer == "5"
    assert "graph.children(symbol)" in model.calls[0].messages[0].content


def test_codegen_native_and_feedforward(hydra_graph: SceneGraph) -> None:
    model = ScriptedChatModel(
        [ToolCall("c1", "run_python", {"code": "raise ValueError('boom')"}), "<O1>"], supports_tools=True
    )
    result = CodeGenAgent(model, hydra_graph).run("Which object?")
    assert not result.tools[0].ok and "boom" in model.calls[1].messages[-1].content
    ff = ScriptedChatModel([{"thought": "t", "code": "result = 2 + 3"}, {"answer": "5"}])
    result = CodeGenAgent(ff, hydra_graph, CodeGenConfig(mode="feedforward")).run("2+3?")
    assert result.answer == "5" and "result = 5" in ff.calls[1].messages[-1].content
