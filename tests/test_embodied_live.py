"""The EmbodiedRAG loop with real models: the local GGUF model decoding under the step grammar (every reply
parses and names a call on the step's menu), and an OpenAI-compatible endpoint (a real HTTP server on
127.0.0.1 with scripted replies) driving the same loop without a grammar, its replies validated.

The local test is evidence that the grammar path works with the real model, not a quality benchmark
(benchmarks/embodied_bench.py). It is skipped only when llama-cpp-python or the model is not installed."""

from __future__ import annotations

import json
from typing import Any

import pytest

from scenerag.agents.embodied import (
    HOUSEHOLD,
    BenchmarkConfig,
    EmbodiedPlanner,
    HouseholdEpisode,
    PlannerConfig,
    run_benchmark,
)
from scenerag.sim.household import get_task
from test_embodied_planner import WordEmbedder
from test_llm_openai import FakeServer, completion, model_for, server  # noqa: F401  (server: fixture)


def test_local_model_replies_under_the_grammar_name_menu_calls() -> None:
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed")
    from test_llm_local import _SKIP_REASON

    if _SKIP_REASON is not None:
        pytest.skip(_SKIP_REASON)
    from scenerag.llm.local import LocalChatModel

    model = LocalChatModel(n_ctx=4096, cache_reuse="longest")
    agent = EmbodiedPlanner(
        model, "embodiedrag-feedback", HOUSEHOLD, embedder=WordEmbedder(), config=PlannerConfig(max_steps=4)
    )
    menus: list[Any] = []
    decide = agent.decider.decide

    def recording(messages: Any, menu: Any) -> Any:
        menus.append(menu)
        return decide(messages, menu)

    agent.decider.decide = recording  # type: ignore[method-assign]
    result = agent.run(HouseholdEpisode.create("l_shape", 0, 290), get_task("easy_02"))
    assert result.steps >= 1 and result.error is None
    assert result.invalid_replies == 0  # the grammar admits only calls on the step's menu
    for step, menu in zip(result.trajectory, menus, strict=True):
        assert step.thought and step.action in menu.names
        item = menu.action(step.action)
        for parameter, ids in item.forms():
            if ids is not None and parameter.name in step.arguments:
                assert step.arguments[parameter.name] in ids
        assert step.prompt_eval_s is not None and step.generation_s is not None
        assert step.evaluated_tokens is not None and step.generated_tokens
    later = [s.evaluated_tokens or 0 for s in result.trajectory[1:]]
    assert all(n < s.input_tokens / 2 for n, s in zip(later, result.trajectory[1:], strict=True))  # cached


def _reply(body: dict[str, Any]) -> tuple[int, dict[str, str], dict[str, Any]]:
    system = body["messages"][0]["content"]
    user = body["messages"][-1]["content"]
    if system.startswith("You prepare the memory"):
        return completion(json.dumps({"entities": [{"name": "fridge", "attributes": ["isOpen"]}]}))
    assert "grammar" not in body  # endpoints get no grammar: replies are validated instead
    if "Previous steps" not in user:
        return completion(
            "I look for the fridge.\nObjects: fridge\nAction: search('Fridge')", usage=(900, 20)
        )
    if "cannot take" not in user:
        return completion("Thought: open it\nObjects: fridge\nAction: open(Fridge_9)", usage=(950, 20))
    return completion("Thought: the id is Fridge_1\nObjects: fridge\nAction: open(fridge_1)", usage=(990, 20))


def test_an_endpoint_model_runs_the_same_loop_without_a_grammar(server: FakeServer) -> None:  # noqa: F811
    server.replies = [_reply] * 10
    model = model_for(server)
    config = BenchmarkConfig(
        agents=["embodiedrag-feedback"], tasks="easy_02", distractors=(0,), planner=PlannerConfig(max_steps=5)
    )
    report = run_benchmark(config, model, WordEmbedder())
    [episode] = report.episodes
    assert episode.success and episode.steps == 3 and episode.invalid_replies == 1
    first, bad, good = episode.trajectory
    assert (first.thought, first.action, first.arguments) == (
        "",
        "search",
        {"query": "Fridge"},
    )  # no "Thought:" label: the action still counts
    assert (
        bad.cause == "invalid_reply"
        and "open cannot take 'Fridge_9' now; it can take: Fridge_1" in bad.observation
    )
    assert good.arguments == {"object_id": "Fridge_1"}  # the id's case repaired from the menu
    assert episode.planner_usage.input_tokens == 900 + 950 + 990  # the provider's own counts
    assert first.prompt_eval_s is None  # endpoints do not split the call's time
    assert episode.counted_along is None
