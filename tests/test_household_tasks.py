"""The 40 household tasks: every task is solvable in every layout (scripted expert), its check passes after
the correct plan and fails after an incomplete or wrong one."""

from __future__ import annotations

from collections import Counter

import pytest

from scenerag.sim.household import (
    CATALOG,
    LAYOUT_STYLES,
    TASKS,
    HouseholdEnv,
    OracleSolver,
    UnknownTaskError,
    get_task,
    replay,
    solve,
)
from scenerag.sim.household.world import World


def _snapshot(world: World) -> list[tuple[object, ...]]:
    return [(o.object_id, o.parent, o.state.as_dict()) for o in world.objects.values()]


def test_task_catalogue() -> None:
    assert Counter(t.difficulty for t in TASKS) == {"easy": 20, "hard": 20}
    assert [t.task_id for t in TASKS] == [f"easy_{i:02d}" for i in range(1, 21)] + [
        f"hard_{i:02d}" for i in range(1, 21)
    ]
    instructions = [t.instruction for t in TASKS]
    assert len(set(instructions)) == 40 and all(i.endswith(".") for i in instructions)
    for task in TASKS:
        assert set(task.required_types) <= set(CATALOG), task.task_id
        named = {t for r in task.requirements for t in (*r.types, *r.inside)}
        assert named <= set(task.required_types), (task.task_id, named - set(task.required_types))
    assert get_task("hard_01").instruction == "Cook an egg."
    assert (
        get_task("hard_06").instruction == "Place all kitchen utensils that are not knives away in drawers."
    )
    with pytest.raises(UnknownTaskError, match="easy_01"):
        get_task("easy_21")


def _check_all_tasks(style: str, seed: int, n_distractors: int) -> list[str]:
    problems = []
    for task in TASKS:
        env = HouseholdEnv(style, seed, n_distractors)
        if task.check(env.world):
            problems.append(f"{task.task_id}: already satisfied at start")
            continue
        plan = solve(env, task)
        if not task.check(env.world):
            problems.append(f"{task.task_id}: expert plan did not satisfy it")
        fresh = HouseholdEnv(style, seed, n_distractors)
        results = replay(fresh, plan)
        if not all(r.success for r in results) or not task.check(fresh.world):
            problems.append(f"{task.task_id}: replay of the plan on a fresh env failed")
        elif _snapshot(fresh.world) != _snapshot(env.world):
            problems.append(f"{task.task_id}: replay is not deterministic")
        truncated = HouseholdEnv(style, seed, n_distractors)
        if not all(r.success for r in replay(truncated, plan[:-1])) or task.check(truncated.world):
            problems.append(f"{task.task_id}: the plan without its last step still satisfies the task")
    return problems


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("style", LAYOUT_STYLES)
def test_every_task_is_solvable_in_every_layout(style: str, seed: int) -> None:
    assert _check_all_tasks(style, seed, 0) == []


@pytest.mark.parametrize(("style", "n_distractors"), [("island", 1135), ("galley", 290)])
def test_every_task_is_solvable_with_distractors(style: str, n_distractors: int) -> None:
    assert _check_all_tasks(style, 2, n_distractors) == []


@pytest.fixture()
def kitchen() -> tuple[HouseholdEnv, OracleSolver]:
    env = HouseholdEnv("single_wall", 0)
    return env, OracleSolver(env)


def _first(env: HouseholdEnv, object_type: str) -> str:
    return next(o.object_id for o in env.world.of_type(object_type))


def test_cook_an_egg_needs_the_burner_on(kitchen: tuple[HouseholdEnv, OracleSolver]) -> None:
    env, solver = kitchen
    task = get_task("hard_01")
    egg, pan = _first(env, "Egg"), _first(env, "Pan")
    burner = solver._burner_for(pan)
    solver.put(pan, burner)
    solver.put(egg, pan)
    assert not task.check(env.world)
    assert task.unmet(env.world) == list(task.requirements)
    solver.switch_on(burner)
    assert task.check(env.world) and task.unmet(env.world) == []


def test_microwave_task_rejects_a_stove_cooked_potato(kitchen: tuple[HouseholdEnv, OracleSolver]) -> None:
    env, solver = kitchen
    potato = _first(env, "Potato")
    solver.cook_on_stove(potato)
    assert env.world.objects[potato].state.isCooked
    assert not get_task("hard_09").check(env.world)  # cooked, but not in the microwave


def test_salad_needs_one_bowl() -> None:
    seed = next(s for s in range(50) if len(list(HouseholdEnv("l_shape", s).world.of_type("Bowl"))) >= 2)
    env = HouseholdEnv("l_shape", seed)
    solver = OracleSolver(env)
    lettuce, tomato = _first(env, "Lettuce"), _first(env, "Tomato")
    bowl_a, bowl_b = [b.object_id for b in env.world.of_type("Bowl")][:2]
    solver.slice(lettuce)
    solver.slice(tomato)
    solver.put(lettuce, bowl_a)
    solver.put(tomato, bowl_b)
    task = get_task("hard_10")
    assert task.unmet(env.world) == [] and not task.check(env.world)
    solver.put(tomato, bowl_a)
    assert task.check(env.world)


def test_fridge_must_be_closed_afterwards(kitchen: tuple[HouseholdEnv, OracleSolver]) -> None:
    env, solver = kitchen
    fridge = _first(env, "Fridge")
    for object_type in ("Lettuce", "Tomato", "Egg"):
        solver.put(_first(env, object_type), fridge)
    task = get_task("hard_18")
    assert env.world.objects[fridge].state.isOpen and not task.check(env.world)
    solver.close(fridge)
    assert task.check(env.world)


def test_all_quantifiers(kitchen: tuple[HouseholdEnv, OracleSolver]) -> None:
    env, solver = kitchen
    utensils = get_task("hard_06")
    drawers = [d.object_id for d in env.world.of_type("Drawer")]
    spatula = _first(env, "Spatula")
    solver.put(spatula, drawers[0])
    assert get_task("easy_11").check(env.world) and not utensils.check(env.world)
    soap = get_task("hard_19")
    full = next(s.object_id for s in env.world.of_type("SoapBottle") if not s.state.isUsedUp)
    empty = next(s.object_id for s in env.world.of_type("SoapBottle") if s.state.isUsedUp)
    garbage = _first(env, "GarbageCan")
    solver.put(full, garbage)
    assert not soap.check(env.world)
    solver.put(empty, garbage)
    assert soap.check(env.world)
    mugs = get_task("hard_05")
    dirty = next(m.object_id for m in env.world.of_type("Mug") if m.state.isDirty)
    solver.put(dirty, _first(env, "Sink"))
    assert not mugs.check(env.world)  # in the sink, but the faucet is off
    solver.switch_on(_first(env, "Faucet"))
    assert mugs.check(env.world)


def test_set_the_table_needs_all_three(kitchen: tuple[HouseholdEnv, OracleSolver]) -> None:
    env, solver = kitchen
    table = _first(env, "DiningTable")
    task = get_task("hard_13")
    for object_type in ("Fork", "Cup"):
        solver.put(_first(env, object_type), table)
    assert not task.check(env.world) and len(task.unmet(env.world)) == 1
    solver.put(_first(env, "Plate"), table)
    assert task.check(env.world)


def test_plan_steps_are_bounded() -> None:
    env = HouseholdEnv("u_shape", 0)
    lengths = {t.task_id: len(solve(HouseholdEnv("u_shape", 0), t)) for t in TASKS}
    assert all(1 <= n <= 40 for n in lengths.values())
    assert sum(lengths[t.task_id] for t in TASKS if t.difficulty == "hard") > sum(
        lengths[t.task_id] for t in TASKS if t.difficulty == "easy"
    )
    assert env.step_count == 0
