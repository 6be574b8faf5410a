"""End to end with the REAL local model (Qwen2.5-Coder-1.5B GGUF through llama-cpp-python): the Cypher
agent answers one question about the Hydra example by querying the embedded database.

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


def test_local_model_answers_by_querying_the_database(store: CypherStore, hydra_graph: SceneGraph) -> None:
    from scenerag.llm import make_chat_model

    model = make_chat_model("local")  # fails loudly (not skipped) when the offline model is not installed
    assert model.name.startswith("local:")
    agent = CypherAgent(model, store, CypherAgentConfig(max_tool_calls=3))
    result = agent.run("How many rooms are there?", answer_type="number")
    assert result.error is None, result.transcript
    assert result.tools and any(t.ok for t in result.tools), "the model must have queried the database"
    assert result.usage.input_tokens > 500 and result.usage.output_tokens > 0
    expected = str(hydra_graph.label_counts()["Room"])
    assert sldp_equal(result.answer or "", expected), (result.answer, [t.input for t in result.tools])
