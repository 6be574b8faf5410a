"""EmbodiedRAG control flow with a scripted model: pre-retrieval and self-query parsing, per-agent contexts,
full-graph requests (allowed, counted, refused for strict agents), feedback adding entities to the next
subgraph, index updates during an episode, failure feedback, step limit, token accounting."""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from scenerag.agents.embodied import (
    HOUSEHOLD,
    AgentKind,
    EmbodiedConfigError,
    EmbodiedPlanner,
    EntitySpec,
    EpisodeResult,
    HouseholdEpisode,
    PlannerConfig,
    PreRetrieval,
    PreRetriever,
    SelfQuerier,
    allowed_actions,
    summarize,
)
from scenerag.agents.embodied.decisions import count_prompt_tokens
from scenerag.agents.embodied.environment import EnvironmentSpec
from scenerag.agents.embodied.planner import StableOrder
from scenerag.llm import LLMError, Message, ScriptedChatModel, ToolCall
from scenerag.llm.base import estimate_tokens
from scenerag.retrieval.documents import label_text
from scenerag.sim.household import ATTRIBUTE_NAMES, TASKS, HouseholdEnv, get_task

PLANNER = "You are the task planner"
PRE = "You prepare the memory"
SELF = "You turn the latest thought"


@dataclass
class _Stats:
    texts_encoded: int


class WordEmbedder:
    """Deterministic bag-of-words embedder (identical label texts score 1.0); counts encoded texts."""

    name = "test-words"
    dim = 256

    def __init__(self) -> None:
        self.encoded = 0

    def embed(self, texts: Sequence[str], *, batch_size: int = 64, progress: object = None) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            self.encoded += 1
            for word in re.findall(r"[a-z]+", label_text(text)):
                out[row, int(hashlib.blake2b(word.encode(), digest_size=4).hexdigest(), 16) % self.dim] += 1.0
            out[row, -1] += 0.05
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    def stats(self) -> _Stats:
        return _Stats(self.encoded)


Reply = ToolCall | LLMError | str


class Router:
    """Answers each call by its kind: pre-retrieval, self-query, or the next planner reply in order."""

    def __init__(
        self,
        planner: Sequence[Reply],
        *,
        entities: list[dict[str, Any]] | None = None,
        self_query: Callable[[str], dict[str, Any]] | None = None,
    ) -> None:
        self.planner = list(planner)
        self.entities = entities if entities is not None else [{"name": "fridge", "attributes": ["isOpen"]}]
        self.self_query = self_query or (lambda thought: {"queries": []})
        self.prompts: list[list[Message]] = []

    def __call__(self, messages: list[Message]) -> Reply | dict[str, Any]:
        system = messages[0].content
        if system.startswith(PRE):
            return {"entities": self.entities}
        if system.startswith(SELF):
            thought = messages[-1].content.split("Thought: ", 1)[1]
            return self.self_query(thought)
        assert system.startswith(PLANNER)
        self.prompts.append(messages)
        if not self.planner:
            return act("getvisibleobjects", thought="wait")
        return self.planner.pop(0)


def act(action: str, argument: str = "", thought: str = "next", objects: str | None = None) -> str:
    """A plain-text planner reply (the format the grammar enforces on local models)."""
    lines = [f"Thought: {thought}"]
    if objects is not None:
        lines.append(f"Objects: {objects}")
    lines.append(f"Action: {action}({argument})")
    return "\n".join(lines)


def run(
    kind: str,
    router: Router,
    task_id: str = "easy_02",
    *,
    distractors: int = 0,
    native: bool = False,
    max_steps: int = 6,
    task_words: bool = False,
    **options: Any,
) -> tuple[EpisodeResult, ScriptedChatModel]:
    """One episode planned by ``router``; ``task_words`` off by default: most tests search for other types
    to move the robot around (the task words have their own tests); ``options``: more PlannerConfig."""
    model = ScriptedChatModel([router] * 100, supports_tools=native)
    config = PlannerConfig(
        max_steps=max_steps,
        tool_interface="native" if native else "text",
        task_words=task_words,
        **options,
    )
    agent = EmbodiedPlanner(model, kind, HOUSEHOLD, embedder=WordEmbedder(), config=config)
    result = agent.run(HouseholdEpisode.create("l_shape", 0, distractors), get_task(task_id))
    return result, model


@dataclass
class Shown:
    """One object line of a planner prompt: ``id (class) where: attributes; can: actions``."""

    id: str
    cls: str
    where: str
    attributes: dict[str, str]
    can: list[str]


LINE = re.compile(r"^(\S+) \(([^)]+)\)( (?:in \S+|at \S+|held))?(?:: (.*))?$")


def prompt_objects(messages: list[Message]) -> dict[str, Shown]:
    """The scene-graph lines of a planner prompt, by object id."""
    text = messages[-1].content
    block = text.split("Scene graph", 1)[1].split("\n", 1)[1].rsplit("\nStep ", 1)[0]
    out: dict[str, Shown] = {}
    for line in block.splitlines():
        match = LINE.match(line)
        if match is None:
            continue
        values, _, can = (match.group(4) or "").partition("can: ")
        pairs = [p.split("=", 1) for p in values.rstrip("; ").split(", ") if "=" in p]
        out[match.group(1)] = Shown(
            match.group(1),
            match.group(2),
            (match.group(3) or "").strip(),
            {k: v for k, v in pairs},
            can.split(", ") if can else [],
        )
    return out


# -- pre-retrieval and self-query -------------------------------------------------------------------------
def test_pre_retrieval_cleans_the_reply() -> None:
    reply = {
        "entities": [
            {"name": "  Frying   pan ", "attributes": ["ISCOOKED", "isHot", "temperature"]},
            {"name": "frying pan", "attributes": ["isDirty"]},
            {"name": "", "attributes": []},
            {"name": "stove knob", "attributes": ["isToggled"]},
        ]
    }
    model = ScriptedChatModel([reply, {"entities": [{"name": " ", "attributes": []}]}])
    pre = PreRetriever(model, ATTRIBUTE_NAMES).run("Cook an egg.")
    assert [(e.name, e.attributes) for e in pre.entities] == [
        ("Frying pan", ("isCooked", "temperature", "isDirty")),
        ("stove knob", ("isToggled",)),
    ]
    assert not pre.fallback and pre.usage.input_tokens > 0
    schema = model.calls[0].response_schema
    assert schema is not None and "isCooked" in json.dumps(schema)
    fallback = PreRetriever(model, ATTRIBUTE_NAMES).run("Cook an egg.")
    assert fallback.fallback and [e.name for e in fallback.entities] == ["Cook an egg."]
    with pytest.raises(EmbodiedConfigError):
        PreRetriever(model, ())


def test_self_query_builds_typed_filters() -> None:
    from scenerag.sim.household import SceneGraphTracker

    graph, _ = SceneGraphTracker(HouseholdEnv("l_shape", 0, 0)).update()
    reply = {
        "queries": [
            {
                "entity": "mug",
                "conditions": [
                    {"attribute": "isdirty", "value": "true"},
                    {"attribute": "temperature", "value": "roomtemp"},
                    {"attribute": "distance", "value": 1},
                ],
                "attributes": ["isDirty", "nonsense"],
            },
            {"entity": "faucet", "conditions": [], "attributes": ["isToggled"]},
        ]
    }
    model = ScriptedChatModel([reply])
    filterable = [a for a in ATTRIBUTE_NAMES if a != "distance"]
    querier = SelfQuerier(model, ATTRIBUTE_NAMES, filterable=filterable)
    result = querier.run("The mug is dirty; rinse it at the faucet.", "Clean the mug.", graph)
    mug, faucet = result.queries
    assert mug.text == "mug" and mug.filter == {"isDirty": True, "temperature": "RoomTemp"}
    assert mug.attributes == ("isDirty",) and mug.source == "self-query"
    assert faucet.filter is None and faucet.attributes == ("isToggled",)
    assert querier.run("   ", "Clean the mug.").queries == []  # no call for an empty thought
    assert len(model.calls) == 1


# -- agents -----------------------------------------------------------------------------------------------
def test_strict_agents_are_never_offered_the_full_graph() -> None:
    for kind in AgentKind:
        actions = allowed_actions(kind, (a.name for a in HOUSEHOLD.actions))
        assert ("getdiscoveredobjects" in actions) == kind.may_request_full_graph
        assert actions[-1] == "done"
    router = Router([act("search", "Fridge"), act("open", "Fridge_1")])
    result, model = run("embodiedrag-strict", router)
    assert result.success and result.full_graph_requests == 0
    planner_calls = [c for c in model.calls if c.messages[0].content.startswith(PLANNER)]
    for call in planner_calls:
        assert call.grammar is not None and "getdiscoveredobjects" not in call.grammar
        assert "getdiscoveredobjects" not in call.messages[0].content
    # the grammar-free path refuses it too (a model that ignores the grammar), without calling the simulator
    refused, _ = run("embodiedrag-strict", Router([act("getdiscoveredobjects"), act("search", "Fridge")]))
    assert refused.refused_full_graph_requests == 1 and refused.full_graph_requests == 0
    assert refused.trajectory[0].cause == "full_graph_refused"


def test_native_strict_agent_refuses_a_full_graph_call() -> None:
    router = Router(
        [
            ToolCall("", "getdiscoveredobjects", {}),
            "I should look around first.",  # text without a tool call: fed back as an invalid reply
            ToolCall("", "search", {"query": "Fridge"}),
            ToolCall("", "open", {"object_id": "Fridge_1"}),
        ]
    )
    result, model = run("embodiedrag-strict", router, native=True)
    assert result.success and result.steps == 4 and result.invalid_replies == 1
    assert "no action" in result.trajectory[1].observation
    assert result.refused_full_graph_requests == 1 and result.full_graph_requests == 0
    assert "not available" in result.trajectory[0].observation
    first_tools = [t.name for t in model.calls[1].tools]
    assert "getdiscoveredobjects" not in first_tools and "done" in first_tools
    assert "Reply in exactly this form" not in model.calls[1].messages[0].content


def test_embodiedrag_may_request_the_full_graph_and_it_is_counted() -> None:
    router = Router([act("getdiscoveredobjects"), act("search", "Fridge"), act("open", "Fridge_1")])
    result, _ = run("embodiedrag", router, distractors=290)
    assert result.success and result.full_graph_requests == 1
    second = router.prompts[1][-1].content
    assert "Full scene graph (48 discovered objects)" in second
    history = second.split("Full scene graph", 1)[1].split("\nRobot:", 1)[0]
    assert sum(1 for line in history.splitlines() if LINE.match(line)) == 48  # every discovered object


def test_full_mem_shows_everything_and_rag_only_the_task_subgraph() -> None:
    full_router = Router([act("search", "Fridge"), act("open", "Fridge_1")])
    full, _ = run("full-mem", full_router, distractors=290)
    rag_router = Router([act("search", "Fridge"), act("open", "Fridge_1")])
    rag, _ = run("embodiedrag-strict", rag_router, distractors=290)
    assert full.success and rag.success
    full_objects = prompt_objects(full_router.prompts[1])
    rag_objects = prompt_objects(rag_router.prompts[1])
    assert len(full_objects) > 50
    # every attribute of every object: the agent-relative ones in the block after the robot's position
    relative = HOUSEHOLD.agent_relative_attributes
    assert all(
        set(o.attributes) >= set(ATTRIBUTE_NAMES) - relative and not set(o.attributes) & relative
        for o in full_objects.values()
    )
    header, near = (
        full_router.prompts[1][-1].content.split("Now, from where you stand (", 1)[1].split("\n", 1)
    )
    assert header == "id: visible, isInteractable, distance; can: actions):"
    near_lines = dict(line.split(": ", 1) for line in near.splitlines() if not line.startswith("Step "))
    assert set(near_lines) == set(full_objects)
    values = [near_lines[i].split(";")[0].split(", ") for i in full_objects]
    assert all(len(v) == 3 and v[0] in ("true", "false") and float(v[2]) >= 0 for v in values)
    assert [o.cls for o in rag_objects.values()] == ["Fridge"]
    fridge = rag_objects["Fridge_1"]
    assert fridge.where.startswith("at P")
    # only the task-relevant attribute, after the one every line shows (within reach or not)
    assert fridge.attributes == {"isInteractable": "true", "isOpen": "false"}
    assert rag.planner_usage.input_tokens * 5 < full.planner_usage.input_tokens
    react_router = Router([act("search", "Fridge"), act("open", "Fridge_1")])
    react, _ = run("react", react_router)
    assert "not shown" in react_router.prompts[0][-1].content and react.success


def test_token_accounting_uses_provider_usage() -> None:
    router = Router(
        [act("search", "Fridge", "find it", "fridge"), act("open", "Fridge_1", "open it", "fridge")]
    )
    result, model = run("embodiedrag-feedback", router)
    assert result.success and result.steps == 2
    by_kind: dict[str, int] = {PLANNER: 0, PRE: 0, SELF: 0}
    for call in model.calls:
        prefix = next(p for p in by_kind if call.messages[0].content.startswith(p))
        rendered = "\n".join(f"{m.role}: {m.content}" for m in call.messages)
        by_kind[prefix] += estimate_tokens(rendered)  # what the scripted provider reports as input
    assert result.planner_usage.input_tokens == by_kind[PLANNER]
    assert result.retrieval_usage.input_tokens == by_kind[PRE]
    assert result.planner_usage.input_tokens == sum(s.input_tokens for s in result.trajectory)
    assert result.total_tokens == result.planner_tokens + result.retrieval_usage.total_tokens
    # the self-query comes with the planner's reply: no call of its own
    assert by_kind[SELF] == 0 and len(model.calls) == 3


def test_self_query_feedback_adds_entities_to_the_next_subgraph() -> None:
    plan = [
        act("getvisibleobjects", thought="First I check the kettle.", objects="kettle"),
        act("search", "Fridge", objects="none"),
        act("getvisibleobjects"),
    ]
    feedback_router = Router(list(plan))
    feedback, model = run("embodiedrag-feedback", feedback_router, max_steps=3)
    strict_router = Router(list(plan))
    run("embodiedrag-strict", strict_router, max_steps=2)
    first = prompt_objects(feedback_router.prompts[0])
    second = prompt_objects(feedback_router.prompts[1])
    assert not any(o.cls == "Kettle" for o in first.values())
    kettle = next(o for o in second.values() if o.cls == "Kettle")
    # the task's attributes (isInteractable, isOpen), less isOpen: a kettle does not open (openable=false)
    assert set(kettle.attributes) == {"isInteractable"}
    holder = kettle.where.removeprefix("in ")
    assert holder in second and set(second[holder].attributes) <= {"isInteractable", "isOpen"}
    assert not any(o.cls == "Kettle" for o in prompt_objects(strict_router.prompts[1]).values())
    # the window is one step: "none" drops the kettle again
    assert not any(o.cls == "Kettle" for o in prompt_objects(feedback_router.prompts[2]).values())
    assert feedback.trajectory[0].self_queries[0]["entity"] == "kettle"
    assert feedback.trajectory[0].objects == ["kettle"] and feedback.trajectory[1].objects == []
    planner_grammar = model.calls[1].grammar
    assert planner_grammar is not None and '"Objects: "' in planner_grammar
    assert "Objects:" in model.calls[1].messages[0].content
    assert "Objects:" not in strict_router.prompts[0][0].content


def test_index_updates_incrementally_during_the_episode() -> None:
    router = Router([act("search", "Fridge"), act("open", "Fridge_1")])
    result, _ = run("embodiedrag-strict", router)
    search, opened = (step.index_update for step in result.trajectory)
    assert search is not None and opened is not None
    assert search["added"] > 0 and search["texts_embedded"] == search["added"]
    assert opened["reembedded"] == 0 and opened["metadata_only"] >= 1
    assert opened["texts_embedded"] == opened["added"]
    # the retrieved subgraph followed the change: the fridge shows as open once opened
    final = [o for o in prompt_objects(router.prompts[-1]).values() if o.cls == "Fridge"]
    assert final and final[0].attributes["isOpen"] == "false"  # the prompt before the open action
    assert result.required_retrieved_first == [] and result.required_retrieved_ever == ["Fridge"]
    assert result.recall_first == 0.0 and result.recall_after_feedback == 1.0
    assert result.required_discovered_first == [] and result.recall_first_discovered is None


def test_failures_are_fed_back_and_done_is_checked() -> None:
    router = Router(
        [act("done"), act("pickup", "Fridge_1"), act("search", "Fridge"), act("open", "Drawer_5")]
    )
    result, model = run("embodiedrag-strict", router, max_steps=4)
    assert not result.success and result.steps == 4
    assert result.failed_actions == 1 and result.invalid_replies == 2  # not on the menu: never sent
    second = router.prompts[1][-1].content
    assert "1. done() -> FAILED: The task is not complete yet" in second
    assert "Your last action did not work (see why above): do not repeat it unchanged" in second
    assert (
        "'pickup' is not an action you can take now; you can: randomlyexplore"
        in router.prompts[2][-1].content
    )
    # Drawer_5 was discovered by the search but is not in the task's subgraph: open can take the fridge only
    assert "open cannot take 'Drawer_5' now; it can take: Fridge_1" in result.trajectory[3].observation
    assert result.failure_causes == {"invalid_reply": 2, "not_complete": 1}
    assert result.end_cause == "step_limit"
    # the grammar offers pickup only for pickupable objects in the context, and done not right after it failed
    grammar = model.calls[2].grammar
    assert grammar is not None and "act-pickup" not in grammar and "act-done" not in grammar
    assert "act-done" in (model.calls[4].grammar or "")  # the search changed the scene graph


def strict_episode(
    router: Router, task_id: str = "easy_02", config: PlannerConfig | None = None
) -> tuple[EpisodeResult, ScriptedChatModel, HouseholdEpisode]:
    """An embodiedrag-strict episode of ``task_id`` (default easy_02, open the fridge) in the l_shape
    kitchen, 0 distractors, planned by ``router`` through a model that ignores grammars (task words off
    unless ``config`` says otherwise); the episode keeps the simulator's log."""
    model = ScriptedChatModel([router] * 20, supports_tools=False)
    agent = EmbodiedPlanner(
        model,
        "embodiedrag-strict",
        HOUSEHOLD,
        embedder=WordEmbedder(),
        config=config or PlannerConfig(task_words=False),
    )
    episode = HouseholdEpisode.create("l_shape", 0, 0)
    return agent.run(episode, get_task(task_id)), model, episode


def test_a_failed_action_is_refused_until_something_changes() -> None:
    """fillheldobjectwithwater fails (the mug is held far from any faucet); the same call is then left out of
    the grammar and, from a model that ignores grammars, refused without reaching the simulator; after the
    robot has moved it is allowed again."""
    router = Router(
        [
            act("search", "Mug"),
            act("pickup", "Mug_1"),
            act("fillheldobjectwithwater"),
            act("fillheldobjectwithwater"),
            act("search", "Fridge"),
            act("open", "Fridge_1"),
        ]
    )
    result, model, episode = strict_episode(router)
    assert result.success and result.steps == 6
    steps = result.trajectory
    assert steps[2].cause == "no_water_source" and "no faucet within reach" in steps[2].observation
    assert steps[3].refused and steps[3].cause == "refused_repeat" and result.refused_repeats == 1
    assert (
        "Refused without trying: fillheldobjectwithwater() already failed at step 3" in steps[3].observation
    )
    sent = [a for a, _, _ in episode.env.history]
    assert sent.count("fillheldobjectwithwater") == 1  # the failure, not the refused repeat
    planner = [c for c in model.calls if c.messages[0].content.startswith(PLANNER)]
    fill = '"fillheldobjectwithwater()"'
    assert planner[2].grammar is not None and fill in planner[2].grammar
    assert fill not in (planner[3].grammar or "")  # refused: the grammar cannot produce it
    assert fill not in (planner[4].grammar or "")  # still the same situation after the refusal
    assert fill in (planner[5].grammar or "")  # moved: same hand, but no longer the same situation
    fourth = router.prompts[3][-1].content
    assert "3. fillheldobjectwithwater() -> FAILED: no faucet within reach" in fourth
    assert "4. fillheldobjectwithwater() -> REFUSED: Refused without trying" in router.prompts[4][-1].content


def test_an_object_out_of_reach_is_offered_only_for_moveto() -> None:
    """Reach is an affordance: an object the robot cannot reach is on the menu for moveto only, so open
    on a far fridge is never sent to the simulator (a model that ignores grammars is told what open can
    take now); once next to it, open is offered and moveto is not."""
    router = Router(
        [
            act("search", "Fridge"),
            act("search", "LightSwitch"),
            act("open", "Fridge_1"),
            act("moveto", "Fridge_1"),
            act("open", "Fridge_1"),
        ]
    )
    result, model, episode = strict_episode(router)
    assert result.success and result.steps == 5
    steps = result.trajectory
    assert steps[2].cause == "invalid_reply"
    assert "open' is not an action you can take now (open needs isInteractable=true" in steps[2].observation
    assert [a for a, _, _ in episode.env.history].count("open") == 1  # only the reachable one was sent
    far = prompt_objects(router.prompts[2])["Fridge_1"]
    near = prompt_objects(router.prompts[4])["Fridge_1"]
    assert far.attributes["isInteractable"] == "false" and far.can == ["moveto"]
    assert near.attributes["isInteractable"] == "true" and near.can == ["open"]
    planner = [c for c in model.calls if c.messages[0].content.startswith(PLANNER)]
    assert 'open-arg0 ::= "Fridge_1"' not in (planner[2].grammar or "")
    assert 'open-arg0 ::= "Fridge_1"' in (planner[4].grammar or "")


def test_a_call_that_changed_nothing_is_not_repeated() -> None:
    router = Router(
        [act("getvisibleobjects"), act("getvisibleobjects"), act("search", "Fridge"), act("open", "Fridge_1")]
    )
    result, model = run("embodiedrag-strict", router)
    assert result.success and result.steps == 4 and result.refused_repeats == 1
    assert not result.trajectory[0].graph_changed and result.trajectory[0].ok
    assert "getvisibleobjects() at step 1 changed nothing" in result.trajectory[1].observation
    assert "act-getvisibleobjects" not in (model.calls[2].grammar or "")


def test_a_no_op_is_refused_again_when_the_robot_comes_back_to_the_same_situation() -> None:
    """A search that changed nothing at the fridge is refused again once the robot is back at the fridge
    with nothing done in between (going away and back is no progress)."""
    calls = ["Fridge", "Fridge", "LightSwitch", "Fridge", "Fridge"]
    router = Router([act("search", c) for c in calls])
    result, _ = run("embodiedrag-strict", router, max_steps=len(calls), refuse_known_answers=False)
    outcomes = [(s.ok, s.refused) for s in result.trajectory]
    assert outcomes[1] == (True, False) and not result.trajectory[1].graph_changed  # the first no-op
    assert outcomes[:4] == [(True, False)] * 4 and outcomes[4] == (False, True)  # back at the fridge
    assert "search(Fridge) at step 2 changed nothing" in result.trajectory[4].observation


def test_going_round_in_a_loop_is_refused() -> None:
    """Search A, B, A, B, ...: once a search only leads back to a situation already seen, it is refused the
    next time the robot stands where it was made, even though the way round discovered new objects
    (discoveries are not progress: the situation is what the robot has done, where it is, what it holds)."""
    calls = ["Fridge", "LightSwitch", "Fridge", "LightSwitch", "Fridge", "LightSwitch"]
    router = Router([act("search", c) for c in calls])
    result, model = run("embodiedrag-strict", router, max_steps=len(calls), refuse_known_answers=False)
    assert "Newly discovered" in result.trajectory[1].observation
    outcomes = [(s.ok, s.refused) for s in result.trajectory]
    assert outcomes[:4] == [(True, False)] * 4 and outcomes[4] == (False, True)
    assert "search(Fridge) at step 3 only led back to a situation you had already been in" in (
        result.trajectory[4].observation
    )
    planner = [c for c in model.calls if c.messages[0].content.startswith(PLANNER)]
    search_rules = (planner[4].grammar or "").split("act-search")[0]
    assert '"Fridge"' not in search_rules and '"LightSwitch"' in search_rules


def test_each_prompt_extends_the_previous_one_up_to_the_state_block() -> None:
    """History lines never change once written: step n+1's prompt starts with step n's prompt up to its
    "Robot:" line (so a local model evaluates only the new tokens), and the state comes last."""
    router = Router(
        [act("search", "Fridge"), act("search", "Mug"), act("open", "Fridge_1"), act("moveto", "Fridge_1")]
    )
    result, _ = run("embodiedrag-strict", router, task_id="easy_02", max_steps=4)
    prompts = [p[-1].content for p in router.prompts]
    for before, after in itertools.pairwise(prompts):
        assert after.startswith(before[: before.index("Robot: at")])
    last = prompts[-1]
    assert (
        last.index("Previous steps")
        < last.index("Robot: at")
        < last.index("Scene graph")
        < last.index("Step 4")
    )
    assert len({p[0].content for p in router.prompts}) == 1  # one system prompt: the cached prefix
    assert result.steps == 4


def test_done_ends_a_completed_task_without_auto_stop() -> None:
    model = ScriptedChatModel(
        [Router([act("search", "Fridge"), act("open", "Fridge_1"), act("done")])] * 10, supports_tools=False
    )
    agent = EmbodiedPlanner(
        model, "embodiedrag", HOUSEHOLD, embedder=WordEmbedder(), config=PlannerConfig(stop_on_success=False)
    )
    result = agent.run(HouseholdEpisode.create("l_shape", 0, 0), get_task("easy_02"))
    assert result.success and result.done_declared and result.steps == 3


def test_invalid_replies_and_fatal_errors() -> None:
    router = Router(['{"thought": "hmm"}', act("search", "Fridge"), act("open", "Fridge_1")])
    result, _ = run("embodiedrag-strict", router)
    assert result.success and result.invalid_replies == 1
    assert "could not be used" in router.prompts[1][-1].content
    overflow = Router([LLMError("context_overflow", "prompt too long")])
    failed, _ = run("full-mem", overflow)
    assert not failed.success and failed.steps == 0 and "context_overflow" in (failed.error or "")
    assert failed.end_cause == "context_overflow"
    shown = overflow.prompts[0]
    assert failed.overflow_prompt_tokens == count_prompt_tokens(shown, estimate_tokens)
    assert failed.planner_usage.input_tokens == 0  # nothing was sent, nothing is charged
    row = summarize([failed])[0]
    assert row.context_overflows == 1 and row.mean_overflow_prompt_tokens == failed.overflow_prompt_tokens
    assert row.end_causes == {"context_overflow": 1}


def test_retrieving_agents_need_an_embedder_and_known_names() -> None:
    model = ScriptedChatModel([])
    with pytest.raises(EmbodiedConfigError, match="embedder"):
        EmbodiedPlanner(model, "embodiedrag", HOUSEHOLD)
    with pytest.raises(EmbodiedConfigError, match="unknown agent"):
        EmbodiedPlanner(model, "rag-plus", HOUSEHOLD, embedder=WordEmbedder())
    with pytest.raises(EmbodiedConfigError):
        PlannerConfig(max_steps=0)
    assert EmbodiedPlanner(model, "REACT", HOUSEHOLD).name == "react"


def test_prompt_token_count_includes_the_chat_template() -> None:
    messages = [Message.system("a b c"), Message.user("d")]
    assert count_prompt_tokens(messages, lambda text: len(text.split())) == 3 + 1 + 2 * 5 + 3


def test_counted_prompt_tokens_equal_the_local_models_chat_template_tokens() -> None:
    """Replay measurements count content tokens + ChatML overhead: exactly what llama-cpp sends (its chat
    template rendered and tokenized) for the prompts of a full-graph and a subgraph agent."""
    from llama_cpp import Llama
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    from scenerag.agents.embodied import ReplayDecider
    from scenerag.llm.model_files import resolve_model_path
    from scenerag.sim.household.solver import solve

    llama = Llama(str(resolve_model_path(None)), vocab_only=True, verbose=False)
    formatter = Jinja2ChatFormatter(
        llama.metadata["tokenizer.chat_template"],
        eos_token=llama.detokenize([llama.token_eos()]).decode(),
        bos_token="",
    )

    def count(text: str) -> int:
        return len(llama.tokenize(text.encode(), add_bos=False, special=False))

    def sent(messages: list[Message]) -> int:
        wire = [{"role": m.role, "content": m.content} for m in messages]
        return len(llama.tokenize(formatter(messages=wire).prompt.encode(), add_bos=False, special=True))

    seen: list[list[Message]] = []

    class Recording(ReplayDecider):
        def decide(self, messages: list[Message], menu: Any) -> Any:
            seen.append(messages)
            return super().decide(messages, menu)

    task = get_task("easy_05")
    plan = [(p.name, p.arguments) for p in solve(HouseholdEnv("l_shape", 0, 290), task)]
    pre = PreRetrieval(task.instruction, [EntitySpec("apple", ()), EntitySpec("fridge", ())])
    for kind in ("full-mem", "embodiedrag-strict"):
        agent = EmbodiedPlanner(
            ScriptedChatModel([]), kind, HOUSEHOLD, embedder=WordEmbedder(), decider=Recording(plan, count)
        )
        assert agent.run(HouseholdEpisode.create("l_shape", 0, 290), task, pre_retrieval=pre).success
    assert len(seen) == 2 * len(plan)
    counted = [count_prompt_tokens(m, count) for m in seen]
    assert counted == [sent(m) for m in seen]
    assert max(counted[len(plan) :]) < 2000 < min(counted[: len(plan)])  # subgraph vs full graph prompts


# -- the planner takes its environment as data -------------------------------------------------------------
def test_planner_modules_import_nothing_from_the_simulator() -> None:
    import ast
    from pathlib import Path

    import scenerag.agents.embodied as embodied

    root = Path(embodied.__file__).parent
    modules = (
        "planner",
        "decisions",
        "menu",
        "subgraph",
        "environment",
        "pre_retrieval",
        "self_query",
        "records",
    )
    for name in modules:
        tree = ast.parse((root / f"{name}.py").read_text())
        imported = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        imported += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        assert not [m for m in imported if m.startswith("scenerag.sim")], name


def test_household_spec_mirrors_the_simulators_action_table() -> None:
    from scenerag.agents.embodied.environment import HOLDS
    from scenerag.sim.household import ACTIONS, AGENT_RELATIVE_ATTRIBUTES
    from scenerag.sim.household.scene_graph import HOLDS as SIM_HOLDS

    assert [a.name for a in HOUSEHOLD.actions] == list(ACTIONS)
    for action in HOUSEHOLD.actions:
        sim = ACTIONS[action.name]
        assert (action.signature(), action.description) == (sim.signature(), sim.description)
        assert action.json_schema() == sim.json_schema()
    assert HOUSEHOLD.attribute_names == ATTRIBUTE_NAMES and SIM_HOLDS == HOLDS
    assert not set(HOUSEHOLD.filterable_attributes) & AGENT_RELATIVE_ATTRIBUTES


def test_environment_spec_validation() -> None:
    from scenerag.agents.embodied import ActionSpec, EnvironmentSpec

    look = ActionSpec("look", "Look around.")
    with pytest.raises(EmbodiedConfigError, match="at least one action"):
        EnvironmentSpec((), ("isOn",))
    with pytest.raises(EmbodiedConfigError, match="unique"):
        EnvironmentSpec((look, look), ("isOn",))
    with pytest.raises(EmbodiedConfigError, match="planner's own action"):
        EnvironmentSpec((ActionSpec("done", "Stop."),), ("isOn",))
    with pytest.raises(EmbodiedConfigError, match="attribute names"):
        EnvironmentSpec((look,), ())
    with pytest.raises(EmbodiedConfigError, match="EnvironmentSpec"):
        EmbodiedPlanner(ScriptedChatModel([]), "react", [look])  # type: ignore[arg-type]


@dataclass
class _Changes:
    removed_nodes: tuple[str, ...] = ()
    is_empty: bool = False

    def touched_nodes(self) -> set[str]:
        return set()


@dataclass
class _Outcome:
    success: bool
    message: str


@dataclass
class _LampTask:
    task_id: str = "lamp"
    difficulty: str = "easy"
    instruction: str = "Turn on the lamp."
    required_types: tuple[str, ...] = ("Lamp",)

    def check(self, world: Any) -> bool:
        return bool(world["O1"])


class _LampRoom:
    """A one-lamp environment with nothing of the household simulator."""

    layout = "lamp-room"
    n_distractors = 0

    def __init__(self) -> None:
        self.world = {"O1": False}
        self.calls: list[tuple[str, dict[str, str]]] = []

    def execute(self, action: str, arguments: Any) -> _Outcome:
        self.calls.append((action, dict(arguments)))
        if action == "switch" and arguments.get("lamp") in self.world:
            self.world[arguments["lamp"]] = True
            return _Outcome(True, f"{arguments['lamp']} is on.")
        return _Outcome(False, f"cannot {action} {dict(arguments)}")

    def observe(self) -> tuple[Any, _Changes]:
        from scenerag.graph import ontology as ont
        from scenerag.graph.model import SceneGraph

        graph = SceneGraph()
        graph.add("A0", ont.AGENT, "robot", (0.0, 0.0, 0.0), place="P0", holding="none")
        graph.add("O1", ont.OBJECT, "Lamp", (1.0, 0.0, 0.0), isToggled=self.world["O1"])
        return graph, _Changes()


@pytest.mark.parametrize("native", [False, True])
def test_planner_drives_any_environment_described_as_data(native: bool) -> None:
    from scenerag.agents.embodied import ActionParameter, ActionSpec, EnvironmentSpec

    spec = EnvironmentSpec(
        (
            ActionSpec("switch", "Turn a lamp on.", (ActionParameter("lamp", "id of a lamp, e.g. O1"),)),
            ActionSpec("wait", "Do nothing for a moment."),
        ),
        ("isToggled",),
    )
    reply: Reply = ToolCall("", "switch", {"lamp": "O1"}) if native else act("switch", "O1")
    model = ScriptedChatModel(
        [reply, ToolCall("", "done", {}) if native else act("done")], supports_tools=native
    )
    config = PlannerConfig(stop_on_success=False, tool_interface="native" if native else "text")
    agent = EmbodiedPlanner(model, "full-mem", spec, config=config)
    env = _LampRoom()
    result = agent.run(env, _LampTask())
    assert result.success and result.done_declared and result.steps == 2
    assert env.calls == [("switch", {"lamp": "O1"})]
    assert (result.layout, result.trajectory[0].observation) == ("lamp-room", "O1 is on.")
    first = model.calls[0]
    system = first.messages[0].content
    assert "- switch(lamp): Turn a lamp on." in system and "- wait(): Do nothing" in system
    assert "moveto" not in system and "kitchen" not in system  # nothing of the household simulator
    if native:
        assert [t.name for t in first.tools] == ["switch", "wait", "done"]
        assert first.tools[0].parameters["required"] == ["lamp"]
    else:
        assert first.grammar is not None
        assert 'switch-arg0 ::= "O1"' in first.grammar and '"wait()"' in first.grammar
        assert "O1 (Lamp): isToggled=false" in first.messages[-1].content


def test_objects_the_environment_names_join_the_next_subgraph() -> None:
    """search(Pan) answers that the pan is likely inside a closed cabinet: the task (open the fridge) does
    not retrieve cabinets, but the cabinet the answer names is in the next step's context, with the task's
    attributes and what can be done to it (open), and only for that step."""
    router = Router([act("search", "Pan"), act("search", "Fridge"), act("open", "Fridge_1")])
    result, _ = run("embodiedrag-strict", router, max_steps=3)
    assert result.success
    first = result.trajectory[0]
    assert "Open Cabinet_11 to look inside" in first.observation and first.mentions == ["Cabinet_11"]
    before, after, later = (prompt_objects(p) for p in router.prompts)
    assert "Cabinet_11" not in before
    cabinet = after["Cabinet_11"]
    assert cabinet.attributes == {"isInteractable": "true", "isOpen": "false"} and cabinet.can == ["open"]
    assert "Cabinet_11" not in later and result.trajectory[1].mentions == ["Fridge_1"]


def test_full_mem_prompt_keeps_its_prefix_from_step_to_step() -> None:
    """Full-Mem's graph lines come before the history, unchanged lines first, and the agent-relative
    attributes after it: consecutive prompts share everything up to the first line the action changed, so
    a local model re-evaluates the changed lines, the history and the position block only."""
    router = Router(
        [act("search", "Fridge"), act("search", "Egg"), act("getvisibleobjects"), act("open", "Fridge_1")]
    )
    result, _ = run("full-mem", router, max_steps=4)
    assert result.success
    texts = [p[-1].content for p in router.prompts]
    heads = [t.split("\nPrevious steps:", 1)[0] for t in texts[1:]]
    # search(Egg) moved the robot (every distance changed) but changed no object's own line: same head
    assert heads[1] == heads[0]
    assert heads[2] == heads[1]
    for before, after in itertools.pairwise(texts[1:]):
        shared = next((i for i, (x, y) in enumerate(zip(before, after, strict=False)) if x != y), len(before))
        assert shared >= len(before.split("\nPrevious steps:", 1)[0])
    assert "Now, from where you stand (" in texts[-1].rsplit("\nRobot:", 1)[1]


def test_stable_order_moves_only_changed_lines_to_the_end() -> None:
    order = StableOrder()
    assert [k for k, _ in order.order([("a", "1"), ("b", "1"), ("c", "1")])] == ["a", "b", "c"]
    assert [k for k, _ in order.order([("a", "2"), ("b", "1"), ("c", "1"), ("d", "1")])] == [
        "b",
        "c",
        "a",
        "d",
    ]
    assert [k for k, _ in order.order([("a", "2"), ("b", "1"), ("d", "1")])] == ["b", "a", "d"]
    assert [k for k, _ in order.order([("a", "2"), ("b", "3"), ("d", "1")])] == ["a", "d", "b"]


def test_list_calls_ends_the_prompt_with_the_calls_on_offer() -> None:
    router = Router([act("search", "Fridge"), act("open", "Fridge_1")])
    model = ScriptedChatModel([router] * 10, supports_tools=False)
    config = PlannerConfig(max_steps=2, list_calls=True)
    agent = EmbodiedPlanner(model, "embodiedrag-strict", HOUSEHOLD, embedder=WordEmbedder(), config=config)
    result = agent.run(HouseholdEpisode.create("l_shape", 0, 0), get_task("easy_02"))
    assert result.success
    last = router.prompts[1][-1].content.splitlines()
    assert last[-2] == "You can now: open(Fridge_1)." and last[-1].startswith("Step 2 of at most 2.")
    assert (
        "You can now"
        not in run("embodiedrag-strict", Router([act("search", "Fridge")]), max_steps=1)[1]
        .calls[-1]
        .messages[-1]
        .content
    )
    # Full-Mem: every object's can already ends its prompt
    full = Router([act("search", "Fridge")])
    full_model = ScriptedChatModel([full] * 3, supports_tools=False)
    EmbodiedPlanner(
        full_model, "full-mem", HOUSEHOLD, config=PlannerConfig(max_steps=1, list_calls=True)
    ).run(HouseholdEpisode.create("l_shape", 0, 0), get_task("easy_02"))
    assert "You can now" not in full.prompts[0][-1].content and "can: moveto" in full.prompts[0][-1].content


def test_walkthrough_ends_the_system_prompt_when_asked() -> None:
    """The walkthrough is static (part of the cached system turn), names another task, and follows the
    reply format of the agent (an Objects line only for the self-querying agent)."""
    model = ScriptedChatModel([])
    on = PlannerConfig(walkthrough=True)
    feedback = EmbodiedPlanner(model, "embodiedrag-feedback", HOUSEHOLD, embedder=WordEmbedder(), config=on)
    strict = EmbodiedPlanner(model, "embodiedrag-strict", HOUSEHOLD, embedder=WordEmbedder(), config=on)
    plain = EmbodiedPlanner(model, "embodiedrag-feedback", HOUSEHOLD, embedder=WordEmbedder())
    text = feedback.system_prompt()
    tail = text.split("Example episode of another task (Put a book in a drawer.)", 1)[1]
    assert tail.count("Action: ") == len(HOUSEHOLD.walkthrough) == tail.count("Objects: ")
    # the replies only: the answers are not shown (they would cost every call tokens)
    assert "Action: pickup(Book_1)\nThought: I hold Book_1" in tail and "->" not in tail
    assert "For example" not in text
    assert "For example" in plain.system_prompt()
    assert "Objects: " not in strict.system_prompt().split("Example episode", 1)[1]
    assert "Example episode" not in plain.system_prompt()
    assert all(t.instruction != HOUSEHOLD.walkthrough_task for t in TASKS)
    with pytest.raises(EmbodiedConfigError):
        EnvironmentSpec(HOUSEHOLD.actions, ATTRIBUTE_NAMES, walkthrough=(("a", "b", "c", "d"),))


def planner_calls(model: ScriptedChatModel) -> list[Any]:
    return [c for c in model.calls if c.messages[0].content.startswith(PLANNER)]


def rule(grammar: str | None, name: str) -> str:
    """The body of GBNF rule ``name`` ("" when the grammar has none)."""
    for line in (grammar or "").splitlines():
        if line.startswith(f"{name} ::= "):
            return line.split(" ::= ", 1)[1]
    return ""


def test_search_offers_the_task_words_and_the_types_an_answer_named() -> None:
    """With task words, search takes the vocabulary word nearest each pre-retrieved entity ("frying pan" ->
    Pan, "fridge" -> Fridge) and, for one step, the types the last answer named (the cabinet a search
    points to); a word that is merely a prefix of another (Pot) or off the task (Apple) is not offered,
    and a model that ignores grammars is told which words search can take."""
    router = Router(
        [act("search", "Apple"), act("search", "Pan"), act("search", "Cabinet"), act("search", "Fridge")],
        entities=[{"name": "fridge", "attributes": ["isOpen"]}, {"name": "frying pan", "attributes": []}],
    )
    result, model = run("embodiedrag-strict", router, max_steps=4, task_words=True)
    assert result.task_words == ["Fridge", "Pan"]
    grammars = [c.grammar for c in planner_calls(model)]
    words = [set(re.findall(r'"([A-Za-z]+)"', rule(g, "search-arg0"))) for g in grammars]
    assert words[0] == {"Fridge", "Pan"} and "Pot" not in words[0]
    first = result.trajectory[0]
    assert first.cause == "invalid_reply" and "search cannot take 'Apple' now; it can take: " in (
        first.observation
    )
    assert "Open Cabinet_11 to look inside" in result.trajectory[1].observation
    assert words[2] == {"Fridge", "Pan", "Cabinet"}  # the answer named Cabinet_11
    # the search found a cabinet where the robot stood (no progress), so that word is refused there next
    assert result.trajectory[2].ok and "search(Cabinet)." in router.prompts[3][-1].content
    assert words[3] == {"Fridge", "Pan"} and result.trajectory[3].ok


def test_full_mem_keeps_the_whole_vocabulary() -> None:
    router = Router([act("search", "Apple")])
    result, model = run("full-mem", router, max_steps=1, task_words=True)
    assert result.task_words is None and result.trajectory[0].ok
    assert '"Apple"' in rule(planner_calls(model)[0].grammar, "search-arg0")


def test_a_call_that_would_undo_the_last_change_is_refused() -> None:
    """pickup then placeon back on the receptacle it came from, open then close: each would only undo the
    robot's last change, so it is left out of the grammar and, from a model that ignores grammars, refused
    without reaching the simulator; once something else changed, the same call is allowed."""
    router = Router(
        [
            act("search", "Apple"),
            act("pickup", "Apple_1"),
            act("placeon", "CounterTop_5"),  # where the apple was: refused
            act("search", "Fridge"),
            act("open", "Fridge_1"),
            act("close", "Fridge_1"),  # undoes the open: refused
            act("placeon", "Fridge_1"),
        ],
        entities=[
            {"name": "apple", "attributes": ["isPickedUp"]},
            {"name": "fridge", "attributes": ["isOpen"]},
            {"name": "counter top", "attributes": []},
        ],
    )
    result, model, episode = strict_episode(router, "easy_05", PlannerConfig(max_steps=7))
    steps = result.trajectory
    assert "on CounterTop_5" in steps[0].observation and steps[1].ok
    assert steps[2].refused and steps[2].cause == "refused_repeat"
    assert "placeon(CounterTop_5) would only undo pickup(Apple_1) (step 2)" in steps[2].observation
    assert (
        steps[5].refused and "close(Fridge_1) would only undo open(Fridge_1) (step 5)" in steps[5].observation
    )
    sent = [a for a, _, _ in episode.env.history]
    assert sent.count("placeon") == 1 and "close" not in sent and result.success
    grammars = [c.grammar for c in planner_calls(model)]
    assert '"CounterTop_5"' not in rule(grammars[2], "placeon-arg0")
    assert "act-close" not in rule(grammars[5], "action")
    prompt = router.prompts[2][-1].content
    assert "or an undo of your last change): placeon(CounterTop_5)." in prompt


def test_undo_refusal_can_be_turned_off() -> None:
    router = Router(
        [act("search", "Fridge"), act("open", "Fridge_1"), act("close", "Fridge_1")],
        entities=[{"name": "fridge", "attributes": ["isOpen"]}],
    )
    config = PlannerConfig(max_steps=3, refuse_undo=False, stop_on_success=False)
    result, _, episode = strict_episode(router, "easy_02", config)
    assert not result.trajectory[2].refused and "close" in [a for a, _, _ in episode.env.history]


def test_a_call_whose_answer_is_known_is_refused_wherever_the_robot_stands() -> None:
    """search(Pan) names the closed cabinet to open; asked again from elsewhere with nothing changed, it
    gives the same answer, so from then on it is refused wherever the robot stands, until something is
    done to an object (the cabinet opened), when it is offered again."""
    first = [act("search", "Pan"), act("search", "Fridge"), act("search", "Pan")]  # step 3: same answer
    router = Router([*first, act("search", "Fridge"), act("search", "Pan")])
    result, model = run("embodiedrag-strict", router, max_steps=5, stop_on_success=False)
    steps = result.trajectory
    assert steps[0].observation.split(" Newly")[0] == steps[2].observation.split(" Newly")[0]
    assert steps[3].ok and not steps[3].refused  # back at the fridge
    assert steps[4].refused and "search(Pan) at step 3 gave the same answer as at step 1" in (
        steps[4].observation
    )
    assert '"Pan"' not in rule(planner_calls(model)[4].grammar, "search-arg0")
    router = Router([*first, act("open", "Cabinet_11"), act("search", "Pan")])
    result, model = run("embodiedrag-strict", router, max_steps=5, stop_on_success=False)
    steps = result.trajectory
    assert steps[3].ok and steps[4].ok and not steps[4].refused  # the cabinet was opened: a new answer
    assert '"Pan"' in rule(planner_calls(model)[4].grammar, "search-arg0")


def test_hand_in_thought_starts_each_thought_with_what_the_robot_holds() -> None:
    router = Router([act("search", "Apple"), act("pickup", "Apple_1"), act("search", "Fridge")])
    result, model = run("embodiedrag-strict", router, max_steps=3, hand_in_thought=True)
    grammars = [c.grammar or "" for c in planner_calls(model)]
    assert result.trajectory[1].ok
    assert rule(grammars[0], "root").startswith('"Thought: " "My hand is empty; " thought')
    assert rule(grammars[2], "root").startswith('"Thought: " "I hold Apple_1; " thought')
    _, model = run("embodiedrag-strict", Router([act("search", "Apple")]), max_steps=1)
    assert rule(planner_calls(model)[0].grammar, "root").startswith('"Thought: " thought')


def test_history_counts_what_a_step_discovered_and_subgraph_lines_skip_meaningless_states() -> None:
    """A search's answer keeps its own words in the history, and the objects it happened to discover are
    counted, not listed (they are in the scene graph); a task subgraph shows ``isOpen`` for the fridge but
    not for objects that do not open (``openable=false``), while Full-Mem keeps every attribute."""
    entities = [{"name": n, "attributes": ["isOpen"]} for n in ("fridge", "counter top")]
    router = Router([act("search", "Fridge"), act("getvisibleobjects")], entities=entities)
    result, _ = run("embodiedrag-strict", router, max_steps=2)
    first = result.trajectory[0]
    assert first.discovered > 0 and " Newly discovered: " in first.observation
    history = router.prompts[1][-1].content.split("Previous steps:\n", 1)[1].split("\n", 1)[0]
    answer = first.observation.split(" Newly discovered:", 1)[0]
    assert history == f"1. search(Fridge) -> OK: {answer} Newly discovered: {first.discovered} objects."
    shown = prompt_objects(router.prompts[1])
    assert shown["Fridge_1"].attributes.get("isOpen") == "false"
    counters = [o for o in shown.values() if o.cls == "CounterTop"]
    assert counters and all("isOpen" not in o.attributes for o in counters)
    full_router = Router([act("search", "Fridge"), act("getvisibleobjects")])
    run("full-mem", full_router, max_steps=2)
    assert "openable=false, isOpen=false" in full_router.prompts[1][-1].content


def test_a_full_graph_request_is_refused_until_the_discovered_graph_changes() -> None:
    """Full-Mem asked getdiscoveredobjects() twelve times in one live episode: a repeat whose answer would be
    the same (no object discovered or changed since the last request) is refused without reaching the
    simulator and left out of the grammar; once a search has discovered objects, it is offered and answered
    again."""
    calls = [
        act("getdiscoveredobjects"),
        act("getdiscoveredobjects"),
        act("search", "Fridge"),
        act("getdiscoveredobjects"),
        act("open", "Fridge_1"),
    ]
    router = Router(calls)
    result, model = run("full-mem", router, max_steps=len(calls))
    steps = result.trajectory
    assert [(s.ok, s.refused) for s in steps[:4]] == [
        (True, False),
        (False, True),
        (True, False),
        (True, False),
    ]
    assert steps[1].cause == "refused_repeat" and result.refused_repeats == 1
    assert "getdiscoveredobjects() at step 1 already listed every discovered object" in steps[1].observation
    assert "Newly discovered" in steps[2].observation  # the search discovered objects: a new answer
    assert result.full_graph_requests == 2 and result.success
    planner = planner_calls(model)
    assert "act-getdiscoveredobjects" in (planner[0].grammar or "")
    assert "act-getdiscoveredobjects" not in (planner[1].grammar or "")
    assert "act-getdiscoveredobjects" not in (planner[2].grammar or "")  # the refusal changed nothing
    assert "act-getdiscoveredobjects" in (planner[3].grammar or "")
    assert "getdiscoveredobjects()" in router.prompts[1][-1].content.split("Not possible now", 1)[1]


def test_full_graph_repeats_are_allowed_without_known_answer_refusals() -> None:
    router = Router([act("getdiscoveredobjects"), act("getdiscoveredobjects")])
    result, _ = run("full-mem", router, max_steps=2, refuse_known_answers=False)
    assert [s.ok for s in result.trajectory] == [True, True] and result.full_graph_requests == 2
