"""The EmbodiedRAG benchmark runner: task selection, episodes over agents and distractor settings with a
scripted model, per-agent summaries, and token counts of the prompts replayed along the oracle's plan."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from scenerag.agents.embodied import (
    BenchmarkConfig,
    EmbodiedConfigError,
    EpisodeResult,
    PlannerConfig,
    PreRetrieval,
    format_summary,
    measure_replayed_tokens,
    run_benchmark,
    select_tasks,
    summarize,
)
from scenerag.agents.embodied.decisions import count_prompt_tokens
from scenerag.agents.embodied.pre_retrieval import EntitySpec
from scenerag.llm import Message, ScriptedChatModel
from scenerag.llm.base import estimate_tokens
from scenerag.retrieval.documents import label_text
from scenerag.sim.household import UnknownTaskError, get_task


class WordEmbedder:
    """Deterministic bag-of-words embedder (identical label texts score 1.0)."""

    name = "test-words"
    dim = 256

    def embed(self, texts: Sequence[str], *, batch_size: int = 64, progress: object = None) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"[a-z]+", label_text(text)):
                out[row, int(hashlib.blake2b(word.encode(), digest_size=4).hexdigest(), 16) % self.dim] += 1.0
            out[row, -1] += 0.05
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def test_select_tasks() -> None:
    assert [t.task_id for t in select_tasks("easy:2")] == ["easy_01", "easy_02"]
    assert [t.task_id for t in select_tasks("hard_03, easy_01,hard_03")] == ["hard_03", "easy_01"]
    assert len(select_tasks("hard")) == 20 and len(select_tasks(None)) == 40
    assert [t.task_id for t in select_tasks(["easy:1", "hard:1"])] == ["easy_01", "hard_01"]
    with pytest.raises(UnknownTaskError):
        select_tasks("easy_99")
    with pytest.raises(EmbodiedConfigError):
        select_tasks("easy:x")
    with pytest.raises(EmbodiedConfigError):
        select_tasks(" , ")


def fridge_opener(messages: list[Message]) -> dict[str, Any] | str:
    """Pre-retrieval: the fridge; planner: search it, then open it (text replies)."""
    system, user = messages[0].content, messages[-1].content
    if system.startswith("You prepare the memory"):
        return {"entities": [{"name": "fridge", "attributes": ["isOpen"]}]}
    if "Found Fridge_1" in user:
        return "Thought: open it\nObjects: fridge\nAction: open(Fridge_1)"
    return "Thought: find the fridge\nObjects: fridge\nAction: search(Fridge)"


def test_benchmark_runs_every_agent_and_summarises() -> None:
    model = ScriptedChatModel([fridge_opener] * 200, supports_tools=False)
    config = BenchmarkConfig(tasks="easy_02", distractors=(0, 290), planner=PlannerConfig(max_steps=4))
    lines: list[str] = []
    report = run_benchmark(config, model, WordEmbedder(), progress=lines.append)
    assert len(report.episodes) == 10
    assert all(e.success and e.steps == 2 for e in report.episodes)
    pre_calls = [c for c in model.calls if c.messages[0].content.startswith("You prepare the memory")]
    assert len(pre_calls) == 1  # one pre-retrieval per task instruction, reused
    assert list(report.pre_retrievals) == ["Open the fridge."]
    for e in report.episodes:
        charged = e.retrieval_usage.input_tokens
        assert (charged > 0) == (e.agent.startswith("embodiedrag"))
    rows = summarize(report.episodes)
    assert [(r.agent, r.n_distractors) for r in rows][:2] == [("react", 0), ("full-mem", 0)]
    by_key = {(r.agent, r.n_distractors): r for r in rows}
    assert (
        by_key[("full-mem", 290)].mean_planner_tokens
        > 5 * by_key[("embodiedrag-strict", 290)].mean_planner_tokens
    )
    assert by_key[("embodiedrag-strict", 0)].recall_after_feedback == 1.0
    assert by_key[("react", 0)].recall_first is None and by_key[("react", 0)].success_hard is None
    assert by_key[("react", 0)].success_easy == 1.0
    assert all(r.mean_steps == 2 and r.end_causes == {"success": 1} for r in rows)
    assert (
        by_key[("full-mem", 290)].planner_tokens_per_step
        > 5 * by_key[("embodiedrag-strict", 290)].planner_tokens_per_step
    )
    table = format_summary(rows)
    assert (
        table.count("\n") == 20
        and "embodiedrag-feedback d=290: episodes: success 1; failed steps: none" in table
    )
    assert any("pre-retrieval easy_02: fridge" in line for line in lines)
    assert sum("easy_02 react step 1: search(Fridge) ok" in line for line in lines) == 2  # both settings
    dumped = json.loads(json.dumps(report.to_dict(trajectories=True), default=str))
    assert dumped["episodes"][0]["trajectory"][0]["action"] == "search"
    assert len(dumped["summary"]) == 10
    reloaded = [EpisodeResult.from_dict(e) for e in dumped["episodes"]]
    assert [e.to_dict() for e in reloaded] == dumped["episodes"]
    assert summarize(reloaded) == rows


def test_retrieving_agents_need_an_embedder() -> None:
    with pytest.raises(EmbodiedConfigError, match="embedder"):
        run_benchmark(BenchmarkConfig(agents=["embodiedrag"]), ScriptedChatModel([]))


def test_replayed_prompts_measure_the_token_reduction() -> None:
    task = get_task("hard_01")
    pre = PreRetrieval(
        task.instruction,
        [
            EntitySpec("egg", ("isCooked",)),
            EntitySpec("pan", ()),
            EntitySpec("stove burner", ("isToggled",)),
            EntitySpec("stove knob", ("isToggled",)),
            EntitySpec("fridge", ("isOpen",)),
        ],
    )
    model = ScriptedChatModel([])  # never called: pre-retrieval is given, decisions are replayed
    results = measure_replayed_tokens(
        model,
        task,
        ["full-mem", "embodiedrag-strict"],
        embedder=WordEmbedder(),
        pre_retrieval=pre,
        n_distractors=1135,
        count_tokens=estimate_tokens,
    )
    full, strict = results["full-mem"], results["embodiedrag-strict"]
    assert full.success and strict.success and full.steps == strict.steps > 5
    assert model.calls == []
    assert full.planner_usage.input_tokens >= 10 * strict.planner_usage.input_tokens
    assert strict.recall_after_feedback == 1.0
    assert all(s.input_tokens > 0 and s.output_tokens > 0 for s in strict.trajectory)
    assert strict.retrieval_usage == pre.usage  # the given pre-retrieval's (zero) usage is charged
    with pytest.raises(EmbodiedConfigError, match="replayed"):
        measure_replayed_tokens(
            model, task, ["embodiedrag-feedback"], embedder=WordEmbedder(), pre_retrieval=pre
        )


def test_replay_counts_exactly_the_prompts_shown() -> None:
    from scenerag.agents.embodied import HOUSEHOLD, EmbodiedPlanner, HouseholdEpisode, ReplayDecider

    seen: list[list[Message]] = []

    class Recording(ReplayDecider):
        def decide(self, messages: list[Message], menu: Any) -> Any:
            seen.append(messages)
            return super().decide(messages, menu)

    decider = Recording(
        [("search", {"query": "Fridge"}), ("open", {"object_id": "Fridge_1"})], estimate_tokens
    )
    agent = EmbodiedPlanner(ScriptedChatModel([]), "full-mem", HOUSEHOLD, decider=decider)
    result = agent.run(HouseholdEpisode.create("l_shape", 0, 0), get_task("easy_02"))
    assert result.success and len(seen) == 2
    assert result.planner_usage.input_tokens == sum(count_prompt_tokens(m, estimate_tokens) for m in seen)


def test_oracle_pre_retrieval_names_required_types_and_tested_attributes() -> None:
    from scenerag.agents.embodied.runner import required_types_pre_retrieval

    chill = required_types_pre_retrieval(get_task("hard_07"))
    assert [(e.name, e.attributes) for e in chill.entities] == [
        ("apple", ("temperature",)),
        ("fridge", ()),
        ("plate", ()),
    ]
    store = {e.name: e.attributes for e in required_types_pre_retrieval(get_task("hard_15")).entities}
    assert store == {"bread": (), "cabinet": ("isOpen",)}
    soap = {e.name: e.attributes for e in required_types_pre_retrieval(get_task("hard_19")).entities}
    assert soap["soap bottle"] == ("isUsedUp",) and soap["garbage can"] == ()
    assert chill.usage.total_tokens == 0


def test_replay_benchmark_reports_ratios_per_distractor_setting() -> None:
    from scenerag.agents.embodied.runner import format_replay, replay_benchmark

    model = ScriptedChatModel([])  # required-types pre-retrieval and replayed decisions: never called
    lines: list[str] = []
    report = replay_benchmark(
        model,
        "easy_02,easy_17",
        embedder=WordEmbedder(),
        distractors=(0, 1135),
        pre_retrieval="required-types",
        count_tokens=estimate_tokens,
        progress=lines.append,
    )
    assert model.calls == []
    assert len(report.rows) == 2 * 2 * 3  # tasks x settings x (full-mem, embodiedrag, strict)
    assert all(r.success for r in report.rows)
    ratios = report.ratios()
    assert sorted(ratios) == [0, 1135] and all(len(v) == 2 for v in ratios.values())
    by_key = {(r.task_id, r.n_distractors, r.agent): r for r in report.rows}
    full, strict = by_key[("easy_02", 1135, "full-mem")], by_key[("easy_02", 1135, "embodiedrag-strict")]
    assert full.planner_tokens / strict.planner_tokens in ratios[1135]
    assert min(ratios[1135]) > max(ratios[0])  # distractors grow the full graph, not the subgraph
    assert min(ratios[1135]) >= 10
    assert strict.recall_after_feedback == 1.0 and full.recall_first is None
    dumped = report.to_dict()
    assert dumped["pre_retrieval"] == "required-types"
    assert dumped["rows"][0]["planner_tokens"] > 0 and "recall_first_discovered" in dumped["rows"][0]
    assert dumped["full_mem_over_strict"]["1135"]["tasks"] == 2
    assert dumped["pre_retrievals"]["easy_02"]["entities"][0]["name"] == "fridge"
    text = format_replay(report)
    assert "distractors 1135: full-mem / embodiedrag-strict" in text and "scripted" in text
    assert any(line.startswith("easy_17 pre-retrieval (required-types") for line in lines)
    with pytest.raises(EmbodiedConfigError, match="pre-retrieval"):
        replay_benchmark(model, "easy_02", embedder=WordEmbedder(), pre_retrieval="guess")


def test_episode_token_ratios_pair_agents_by_task_and_setting() -> None:
    from scenerag.agents.embodied.runner import episode_token_ratios, format_ratios
    from scenerag.llm.base import Usage

    def episode(task: str, agent: str, n: int, tokens: int) -> EpisodeResult:
        return EpisodeResult(task, "easy", "x", agent, "m", "l_shape", n, planner_usage=Usage(tokens, 0))

    episodes = [
        episode("easy_01", "full-mem", 1135, 3000),
        episode("easy_01", "embodiedrag-strict", 1135, 100),
        episode("easy_02", "full-mem", 1135, 1000),
        episode("easy_02", "embodiedrag-strict", 1135, 200),
        episode("easy_03", "full-mem", 1135, 999),  # no strict episode: not paired
        episode("easy_01", "full-mem", 0, 400),
        episode("easy_01", "embodiedrag-strict", 0, 0),  # no tokens: no ratio
    ]
    assert episode_token_ratios(episodes) == {1135: [30.0, 5.0]}
    assert format_ratios({1135: [30.0, 5.0]}, "r") == [
        "distractors 1135: r: median 17.5x (min 5.0x, max 30.0x, 2 tasks)"
    ]


def test_cli_bench_embodied_replay_and_episodes(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    import scenerag.agents.embodied.runner as runner
    import scenerag.retrieval.embeddings as embeddings
    from scenerag.cli import app

    monkeypatch.setattr(embeddings, "make_embedder", lambda *a, **k: WordEmbedder())
    cli = CliRunner()
    out = tmp_path / "replay.json"
    result = cli.invoke(
        app,
        [
            "bench", "embodied", "--mode", "replay", "--llm", "scripted", "--pre-retrieval",
            "required-types", "--tasks", "easy", "--limit", "1", "-d", "1135", "--out", str(out),
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "full-mem / embodiedrag-strict planner tokens: median" in result.output
    data = json.loads(out.read_text())
    assert {r["task_id"] for r in data["rows"]} == {"easy_01"}
    assert {r["agent"] for r in data["rows"]} == {"full-mem", "embodiedrag", "embodiedrag-strict"}
    assert data["full_mem_over_strict"]["1135"]["median"] >= 10

    model = ScriptedChatModel([fridge_opener] * 50, supports_tools=False)
    monkeypatch.setattr(runner, "bench_models", lambda spec=None: (model, model))
    out = tmp_path / "episodes.json"
    result = cli.invoke(
        app,
        [
            "bench", "embodied", "--agents", "full-mem,embodiedrag-strict", "--tasks", "easy_02",
            "-d", "0,290", "--max-steps", "3", "--out", str(out),
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert (
        "full-graph" in result.output and "distractors  290: full-mem / embodiedrag-strict" in result.output
    )
    data = json.loads(out.read_text())
    assert [(e["agent"], e["n_distractors"], e["success"]) for e in data["episodes"]] == [
        ("full-mem", 0, True),
        ("embodiedrag-strict", 0, True),
        ("full-mem", 290, True),
        ("embodiedrag-strict", 290, True),
    ]
    bad = cli.invoke(app, ["bench", "embodied", "-d", "100", "--llm", "scripted"])
    assert bad.exit_code != 0 and "distractors" in bad.output


def test_full_mem_prompts_are_counted_along_a_live_trajectory() -> None:
    """Full-Mem replays the actions a live strict episode sent to the simulator (an invalid reply is not
    replayed) and its prompts along them are counted: same steps, same observations, more tokens."""
    from scenerag.agents.embodied.runner import CountedAlong, counted_ratios, format_counted

    def replies(messages: list[Message]) -> dict[str, Any] | str:
        if messages[0].content.startswith("You prepare the memory"):
            return {"entities": [{"name": "fridge", "attributes": ["isOpen"]}]}
        user = messages[-1].content
        if "Found Fridge_1" in user:
            return "Thought: open it\nAction: open(Fridge_1)"
        if "could not be used" in user:
            return "Thought: find the fridge\nAction: search(Fridge)"
        return "Thought: hmm\nAction: open(Fridge_7)"  # not on the menu: an invalid reply, never sent

    model = ScriptedChatModel([replies] * 50, supports_tools=False)
    config = BenchmarkConfig(
        agents=["embodiedrag-strict"],
        tasks="easy_02",
        distractors=(0, 290),
        planner=PlannerConfig(max_steps=4),
        count_along=["embodiedrag-strict"],
    )
    report = run_benchmark(config, model, WordEmbedder())
    assert [e.steps for e in report.episodes] == [3, 3] and all(e.success for e in report.episodes)
    assert [(c.n_distractors, c.counted_agent, c.steps) for c in report.counted] == [
        (0, "full-mem", 2),
        (290, "full-mem", 2),
    ]
    low, high = report.counted
    assert high.counted_planner_tokens > 5 * high.live_planner_tokens and high.ratio is not None
    assert low.counted_planner_tokens < high.counted_planner_tokens
    assert report.episodes[1].counted_along == high.to_dict()
    ratios = counted_ratios(report.counted)
    assert ratios["full-mem/embodiedrag-strict@290"]["episodes"] == 1
    assert (
        "full-mem prompts counted along embodiedrag-strict's live trajectories"
        in format_counted(report.counted)[2]
    )
    dumped = report.to_dict()
    assert dumped["counted_ratios"]["full-mem/embodiedrag-strict@290"]["median"] == high.ratio
    # the static prefix (each agent's system prompt, the same at every call) read off both sides
    assert high.live_steps == 3 and high.live_static_tokens and high.counted_static_tokens
    assert high.live_beyond_static == high.live_planner_tokens - 3 * high.live_static_tokens
    assert high.counted_beyond_static == high.counted_planner_tokens - 2 * high.counted_static_tokens
    assert high.ratio_beyond_static is not None and high.ratio_beyond_static > high.ratio
    row = ratios["full-mem/embodiedrag-strict@290"]
    assert row["median_beyond_static"] == high.ratio_beyond_static
    assert "beyond the static prefix" in format_counted(report.counted)[-1]
    old = {k: v for k, v in high.to_dict().items() if "static" not in k and k != "live_steps"}
    assert (
        counted_ratios([CountedAlong.from_dict(old)])["full-mem/embodiedrag-strict@290"][
            "median_beyond_static"
        ]
        is None
    )  # a record made before the prefix was counted


def test_recount_rebuilds_the_live_prompts_of_a_recorded_episode() -> None:
    """Offline recount of a recorded embodiedrag-feedback episode: its calls replayed with the recorded
    thoughts and Objects lines rebuild exactly the prompts the model was shown live (the self-query's
    retrieval included), so the recounted planner tokens equal the live prompts counted with the same
    tokenizer; Full-Mem is counted along the same calls."""
    from scenerag.agents.embodied.runner import recount_episode

    texts = [
        "Thought: a kettle first\nObjects: kettle\nAction: getvisibleobjects()",
        "Thought: the fridge\nObjects: none\nAction: search(Fridge)",
        "Thought: open it\nObjects: fridge\nAction: open(Fridge_1)",
    ]
    replies = iter(texts)

    def answer(messages: list[Message]) -> dict[str, Any] | str:
        if messages[0].content.startswith("You prepare the memory"):
            return {"entities": [{"name": "fridge", "attributes": ["isOpen"]}]}
        return next(replies)

    model = ScriptedChatModel([answer] * 10, supports_tools=False)
    config = BenchmarkConfig(
        agents=["embodiedrag-feedback"],
        tasks="easy_02",
        distractors=(290,),
        planner=PlannerConfig(max_steps=3, walkthrough=True, list_calls=True),
        count_along=[],
    )
    episode = run_benchmark(config, model, WordEmbedder()).episodes[0]
    assert episode.success and episode.steps == 3
    planner_calls = [c for c in model.calls if not c.messages[0].content.startswith("You prepare")]
    assert len(planner_calls) == 3

    def count(text: str) -> int:
        return len(text.split())

    live = sum(count_prompt_tokens(c.messages, count) for c in planner_calls) + sum(map(count, texts))
    row = recount_episode(
        model,
        EpisodeResult.from_dict(json.loads(json.dumps(episode.to_dict()))),
        get_task("easy_02"),
        style="l_shape",
        embedder=WordEmbedder(),
        count_tokens=count,
        planner=config.planner,
    )
    assert row.live_steps == 3 and row.live_planner_tokens == live
    assert row.counted_agent == "full-mem" and row.counted_planner_tokens > 3 * row.live_planner_tokens
