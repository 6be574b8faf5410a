"""A scripted oracle solver: turns any task into a correct action sequence in any layout.

Contract: ``solve(env, task)`` acts on ``env`` only through ``env.execute`` (so every step obeys the same
rules a planner faces) but chooses objects with privileged knowledge of the true world; it returns the
executed ``PlannedAction`` list, after which ``task.check(env.world)`` holds, or raises ``SolverError``.
The plan replays on a fresh environment with the same layout config (the environment is deterministic).
Used to prove every task solvable in every layout and as an expert demonstration / step-count baseline.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from scenerag.sim.household.actions import ActionResult
from scenerag.sim.household.env import HouseholdEnv
from scenerag.sim.household.errors import SolverError
from scenerag.sim.household.tasks import Requirement, Task

HEATED_ON_STOVE: frozenset[str] = frozenset({"Kettle", "Pot", "Pan"})
COOKWARE_PREFERENCE: tuple[str, ...] = ("Pan", "Pot")


@dataclass(frozen=True)
class PlannedAction:
    """One action call of a plan."""

    name: str
    arguments: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.arguments.items())
        return f"{self.name}({args})"


class OracleSolver:
    """Expert that achieves task requirements with fixed recipes (stove, microwave, toaster, sink, ...)."""

    def __init__(self, env: HouseholdEnv) -> None:
        self.env = env
        self.world = env.world
        self.plan: list[PlannedAction] = []
        self._group_receptacle: dict[str, str] = {}

    # -- primitive steps -----------------------------------------------------------------------
    def do(self, name: str, **arguments: str) -> ActionResult:
        result = self.env.execute(name, arguments)
        action = PlannedAction(name, dict(arguments))
        if not result.success:
            raise SolverError(f"{self.world.name}: {action} failed: {result.message}")
        self.plan.append(action)
        return result

    def reveal(self, object_id: str) -> None:
        """Make ``object_id`` discovered and visible: open what encloses it, then search for it."""
        while (enclosure := self.world.closed_enclosure(object_id)) is not None:
            self.open(enclosure)
        if not self.env.is_discovered(object_id):
            self.do("search", query=object_id)

    def approach(self, object_id: str) -> None:
        self.reveal(object_id)
        if not self.env.is_interactable(object_id):
            self.do("moveto", object_id=object_id)

    def open(self, object_id: str) -> None:
        if self.world.objects[object_id].state.isOpen:
            return
        self.approach(object_id)
        self.do("open", object_id=object_id)

    def close(self, object_id: str) -> None:
        if not self.world.objects[object_id].state.isOpen:
            return
        self.approach(object_id)
        self.do("close", object_id=object_id)

    def hold(self, object_id: str) -> None:
        if self.env.held == object_id:
            return
        if self.env.held is not None:
            self.put_down()
        self.approach(object_id)
        self.do("pickup", object_id=object_id)

    def put_down(self) -> None:
        """Free the hand: put the held object on the nearest counter."""
        counter = self._nearest(self._ids("CounterTop"))
        self.approach(counter)
        self.do("placeon", receptacle_id=counter)

    def put(self, object_id: str, receptacle_id: str) -> None:
        if self.world.objects[object_id].parent == receptacle_id:
            return
        self.hold(object_id)
        receptacle = self.world.objects[receptacle_id]
        if receptacle.spec.openable:
            self.open(receptacle_id)
        self.approach(receptacle_id)
        self.do("placeon", receptacle_id=receptacle_id)

    def switch_on(self, object_id: str) -> None:
        obj = self.world.objects[object_id]
        if obj.spec.controlled_by is not None:
            controller = self.world.controller_of(object_id)
            if controller is None:
                raise SolverError(f"{self.world.name}: {object_id} has no {obj.spec.controlled_by}")
            object_id, obj = controller, self.world.objects[controller]
        if obj.state.isToggled:
            return
        if obj.spec.toggle_requires_closed:
            self.close(object_id)
        self.approach(object_id)
        self.do("toggleon", object_id=object_id)

    # -- recipes -----------------------------------------------------------------------------------
    def slice(self, object_id: str) -> None:
        if self.world.objects[object_id].state.isSliced:
            return
        if self.env.held is None or not self.world.objects[self.env.held].spec.can_slice:
            self.hold(self._nearest(self._ids("Knife") or self._ids("ButterKnife")))
        self.approach(object_id)
        self.do("slice", object_id=object_id)

    def empty(self, container: str) -> None:
        if not self.world.objects[container].state.isFilledWithLiquid:
            return
        self.hold(container)
        sink = self._nearest(self._ids("Sink"))
        self.approach(sink)
        self.do("pourwaterinto", object_id=sink)

    def fill_with_water(self, container: str) -> None:
        state = self.world.objects[container].state
        if state.isFilledWithLiquid and state.fillLiquid == "water":
            return
        self.empty(container)
        self.hold(container)
        faucet = self._nearest(self._ids("Faucet"))
        self.approach(faucet)
        if not self.world.objects[faucet].state.isToggled:
            self.do("toggleon", object_id=faucet)
        self.do("fillheldobjectwithwater")

    def water(self, target: str) -> None:
        """Pour water into something that cannot be carried to the faucet (a plant)."""
        can = self._nearest(self._ids("WateringCan") or self._ids("Cup", "Mug", "Bowl"))
        self.fill_with_water(can)
        self.approach(target)
        self.do("pourwaterinto", object_id=target)

    def brew_coffee(self, mug: str) -> None:
        self.empty(mug)
        machine = self._nearest(self._ids("CoffeeMachine"))
        self.put(mug, machine)
        self.switch_on(machine)

    def cook_on_stove(self, object_id: str) -> None:
        cookware = self._cookware()
        burner = self._burner_for(cookware)
        self.put(cookware, burner)
        self.put(object_id, cookware)
        self.switch_on(burner)

    def heat_on_stove(self, vessel: str) -> None:
        burner = self._burner_for(vessel)
        self.put(vessel, burner)
        self.switch_on(burner)

    def microwave(self, object_id: str) -> None:
        oven = self._nearest(self._ids("Microwave"))
        self.put(object_id, oven)
        self.close(oven)
        self.switch_on(oven)

    def toast(self, bread: str) -> None:
        self.slice(bread)
        toaster = self._nearest(self._ids("Toaster"))
        self.put(bread, toaster)
        self.switch_on(toaster)

    def wash(self, dish: str) -> None:
        sink = self._nearest(self._ids("Sink"))
        self.put(dish, sink)
        faucet = next(f.object_id for f in self.world.of_type("Faucet") if f.controls == sink)
        self.switch_on(faucet)

    # -- requirements ---------------------------------------------------------------------------------
    def achieve(self, requirement: Requirement, object_id: str) -> None:
        """Bring one selected object into compliance with ``requirement`` (state first, then placement)."""
        obj = self.world.objects[object_id]
        wanted: dict[str, Any] = dict(requirement.state)
        if wanted.get("isSliced"):
            self.slice(object_id)
        if wanted.get("fillLiquid") == "water":
            self.fill_with_water(object_id) if obj.spec.pickupable else self.water(object_id)
        if wanted.get("fillLiquid") == "coffee":
            self.brew_coffee(object_id)
        if wanted.get("isCooked") and not obj.state.isCooked:
            if obj.object_type == "Bread":
                self.toast(object_id)
            elif "Microwave" in requirement.inside:
                self.microwave(object_id)
            else:
                self.cook_on_stove(object_id)
        if wanted.get("temperature") == "Hot" and obj.state.temperature != "Hot":
            self.heat_on_stove(object_id) if obj.object_type in HEATED_ON_STOVE else self.microwave(object_id)
        if wanted.get("temperature") == "Cold" and obj.state.temperature != "Cold":
            self.put(object_id, self._nearest(self._ids("Fridge")))
        if wanted.get("isDirty") is False and obj.state.isDirty:
            self.wash(object_id)
        if wanted.get("isToggled"):
            self.switch_on(object_id)
        if wanted.get("isOpen"):
            self.open(object_id)
        if wanted.get("isPickedUp"):
            self.hold(object_id)
        if requirement.inside and not requirement.holders(self.world, obj):
            self.put(object_id, self._receptacle_for(requirement, object_id))

    def solve(self, task: Task) -> list[PlannedAction]:
        for requirement in task.requirements:
            if requirement.satisfied(self.world) and requirement.same_receptacle is None:
                continue
            for object_id in self._targets(requirement):
                self.achieve(requirement, object_id)
        for requirement in task.requirements:  # receptacle states last: close the fridge after filling it
            if requirement.receptacle_state.get("isOpen") is False:
                for obj in [o for o in self.world.objects.values() if requirement.selects(o)]:
                    for holder in self.world.ancestors(obj.object_id):
                        if self.world.objects[holder].object_type in requirement.inside:
                            self.close(holder)
        if not task.check(self.world):
            raise SolverError(f"{self.world.name}: plan for {task.task_id} ended without satisfying it")
        return self.plan

    # -- choices ----------------------------------------------------------------------------------
    def _ids(self, *object_types: str) -> list[str]:
        return [o.object_id for o in self.world.of_type(*object_types)]

    def _nearest(self, object_ids: list[str]) -> str:
        if not object_ids:
            raise SolverError(f"{self.world.name}: no candidate object")
        return min(object_ids, key=lambda o: (self.world.distance(o), o))

    def _targets(self, requirement: Requirement) -> list[str]:
        selected = [o for o in self.world.objects.values() if requirement.selects(o)]
        pending = [o.object_id for o in selected if not requirement.complies(self.world, o)]
        if requirement.quantifier == "all":
            return pending
        if requirement.same_receptacle is not None:
            done = [
                o.object_id
                for o in selected
                if requirement.complies(self.world, o)
                and self._group_receptacle.get(requirement.same_receptacle)
                in requirement.holders(self.world, o)
            ]
            if done:
                return []
        usable = [o for o in pending if not self._needs_emptying(requirement, o)] or pending
        return [self._nearest(usable)] if usable else []

    def _needs_emptying(self, requirement: Requirement, object_id: str) -> bool:
        state = self.world.objects[object_id].state
        wanted = requirement.state.get("fillLiquid")
        return wanted is not None and state.isFilledWithLiquid and state.fillLiquid != wanted

    def _receptacle_for(self, requirement: Requirement, object_id: str) -> str:
        group = requirement.same_receptacle
        if group is not None and group in self._group_receptacle:
            return self._group_receptacle[group]
        excluded = {object_id, *self.world.descendants(object_id)}
        candidates = [r for r in self._ids(*requirement.inside) if r not in excluded and self._has_room(r)]
        choice = self._nearest(candidates)
        if group is not None:
            self._group_receptacle[group] = choice
        return choice

    def _has_room(self, receptacle_id: str) -> bool:
        spec = self.world.objects[receptacle_id].spec.receptacle
        return spec is not None and (
            spec.capacity is None or len(self.world.children(receptacle_id)) < spec.capacity
        )

    def _cookware(self) -> str:
        on_stove = [
            c
            for c in self._ids(*COOKWARE_PREFERENCE)
            if self.world.objects[c].parent in self._ids("StoveBurner") and self._has_room(c)
        ]
        if on_stove:
            return self._nearest(on_stove)
        return self._nearest(
            [c for c in self._ids(COOKWARE_PREFERENCE[0]) if self._has_room(c)]
            or [c for c in self._ids(*COOKWARE_PREFERENCE) if self._has_room(c)]
        )

    def _burner_for(self, vessel: str) -> str:
        parent = self.world.objects[vessel].parent
        if parent is not None and self.world.objects[parent].object_type == "StoveBurner":
            return parent
        return self._nearest([b for b in self._ids("StoveBurner") if not self.world.children(b)])


def solve(env: HouseholdEnv, task: Task) -> list[PlannedAction]:
    """Solve ``task`` on ``env`` (mutating it) and return the executed plan."""
    return OracleSolver(env).solve(task)


def replay(env: HouseholdEnv, plan: list[PlannedAction]) -> list[ActionResult]:
    """Execute ``plan`` on ``env`` and return every result (failures included, nothing is skipped)."""
    return [env.execute(step.name, step.arguments) for step in plan]
