"""Single-step probe behind ``--hand-in-thought`` (issue 25, third round): at eight situations taken from
failed live episodes (the recorded action prefix replayed on the same kitchen, 290 distractors), ask the
local model once per prompt variant, under the step's grammar, which call it makes next.

Variants: ``base`` (``--list-calls --walkthrough``), ``hand`` (the same plus ``hand_in_thought``: the grammar
starts the thought with what the robot holds). The committed output (``probe-hand-in-thought.jsonl``) was
made at 99420c2 by the /tmp harness this file replaces, which wrote the same words into the grammar by a
patch (variant name ``prefix`` there) and also tried the call list with manipulations before ``moveto``
(``order``: no change in any situation). Run under the shared lock:

    flock /work/cpu.lock python benchmarks/results/embodied_parts/probe_hand_in_thought.py
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from scenerag.agents.embodied import EmbodiedPlanner, PlannerConfig
from scenerag.agents.embodied.decisions import Decision, LLMDecider, ReplayDecider
from scenerag.agents.embodied.household import HOUSEHOLD, HouseholdEpisode
from scenerag.agents.embodied.menu import ActionMenu
from scenerag.agents.embodied.pre_retrieval import EntitySpec, PreRetrieval
from scenerag.agents.embodied.runner import bench_models, cycled_style
from scenerag.llm import Message
from scenerag.retrieval.embeddings import make_embedder
from scenerag.sim.household import get_task

# the live pre-retrievals of these tasks (record merged-fb-290-easy01-20-v2.json)
PRE: dict[str, list[tuple[str, list[str]]]] = {
    "easy_05": [("apple", ["isPickedUp"]), ("fridge", ["isOpen"]), ("fridge door", ["isOpen"])],
    "easy_06": [("tomato", ["isSliced", "isPickedUp"]), ("knife", ["isToggled"])],
    "easy_09": [("bread", ["isPickedUp"]), ("plate", [])],
    "easy_12": [("potato", ["isPickedUp"]), ("garbage can", ["isOpen"])],
    "easy_16": [("egg", ["isPickedUp"]), ("bowl", ["isPickedUp"]), ("table", [])],
    "easy_18": [("dish sponge", ["isPickedUp"]), ("sink", ["isOpen"])],
}
SITUATIONS: list[tuple[str, list[tuple[str, dict[str, str]]]]] = [
    ("easy_05", [("search", {"query": "Apple"})]),
    ("easy_05", [("search", {"query": "Apple"}), ("pickup", {"object_id": "Apple_1"})]),
    ("easy_12", [("search", {"query": "Potato"})]),
    ("easy_09", [("search", {"query": "Bread"}), ("pickup", {"object_id": "Bread_1"})]),
    ("easy_16", [("search", {"query": "Egg"}), ("open", {"object_id": "Fridge_1"})]),
    ("easy_18", [("search", {"query": "DishSponge"})]),
    ("easy_09", [("search", {"query": "Plate"})]),
    (
        "easy_06",
        [
            ("search", {"query": "Tomato"}),
            ("pickup", {"object_id": "Tomato_1"}),
            ("search", {"query": "Knife"}),
        ],
    ),
]


class ReplayThenAsk:
    """Replays ``plan``, then asks ``live`` once (the decision it returns is kept in ``last``)."""

    def __init__(self, plan: Sequence[tuple[str, Mapping[str, str]]], live: LLMDecider, counter: Any) -> None:
        self.replay = ReplayDecider(plan, counter)
        self.left = len(plan)
        self.live = live
        self.last: Decision | None = None

    def decide(self, messages: list[Message], menu: ActionMenu) -> Decision:
        if self.left:
            self.left -= 1
            return self.replay.decide(messages, menu)
        self.last = self.live.decide(messages, menu)
        return self.last


def main(variants: Sequence[str]) -> None:
    model, _ = bench_models(None)
    embedder = make_embedder("minilm-numpy", threads=1)
    for task_id, plan in SITUATIONS:
        task = get_task(task_id)
        pre = PreRetrieval(task.instruction, [EntitySpec(n, tuple(a)) for n, a in PRE[task_id]])
        for variant in variants:
            config = PlannerConfig(
                max_steps=len(plan) + 1,
                list_calls=True,
                walkthrough=True,
                stop_on_success=False,
                hand_in_thought=variant == "hand",
            )
            live = LLMDecider(model, HOUSEHOLD.actions, max_reply_tokens=config.max_reply_tokens)
            decider = ReplayThenAsk(plan, live, model.count_tokens)
            agent = EmbodiedPlanner(
                model, "embodiedrag-feedback", HOUSEHOLD, embedder=embedder, config=config, decider=decider
            )
            agent.run(HouseholdEpisode.create(cycled_style(task), 0, 290), task, pre_retrieval=pre)
            assert decider.last is not None
            call = f"{decider.last.action}({', '.join(decider.last.arguments.values())})"
            row = {"task": task_id, "plan": plan, "variant": variant, "action": call}
            print(json.dumps({**row, "thought": decider.last.thought}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or ["base", "hand"])
