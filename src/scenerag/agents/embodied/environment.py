"""What the EmbodiedRAG planner needs from an environment, stated without any simulator: the actions it may
call, as data, and the episode it acts in, as protocols.

Contract: an environment describes its actions with :class:`ActionSpec` (name, description, string
arguments) and its object attributes in an :class:`EnvironmentSpec`; the planner offers them to the model (prompt lines, native tool specs, a JSON-schema action)
and calls ``Environment.execute(name, arguments)``, which never raises for planner mistakes: it returns an
:class:`ActionOutcome` whose message says what happened or why not. ``Environment.observe()`` returns the
robot's scene graph of everything discovered so far and what changed since the previous ``observe()`` (the
first call: everything), so the entity index is updated incrementally. The robot is the graph's ``Agent``
node (attributes ``place``, ``holding``) and holds an object through a :data:`HOLDS` edge. The household
simulator is wired to these in :mod:`scenerag.agents.embodied.household`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from scenerag.agents.embodied.errors import EmbodiedConfigError
from scenerag.graph.model import SceneGraph

HOLDS = "HOLDS"
"""Edge type from the robot's ``Agent`` node to the object it holds."""
DONE_ACTION = "done"
"""The planner's own action ending an episode; no environment action may take the name."""
DEFAULT_INSTRUCTIONS = (
    "You are the task planner of a robot. Work step by step: each turn, think about the task, what you know "
    "and what the last action returned, then choose exactly one action.\n"
    "Objects are named by their id. When the task is complete, choose done."
)
"""The opening of the planner's system prompt for an environment that gives no instructions of its own."""


ParameterKind = Literal["object", "text"]
HandRule = Literal["any", "empty", "holding"]


@dataclass(frozen=True, slots=True)
class ActionParameter:
    """One string argument of an action.

    ``kind``: ``object`` (the id of a discovered object) or ``text`` (free words, e.g. a search query).
    ``requires``: ``(attribute, value)`` pairs the named object must show in the robot's scene graph for
    the action to make sense (``("openable", True), ("isOpen", False)`` for ``open``): its affordances, used
    to restrict what a planner may name. ``excludes``: states that rule an object out although it meets
    ``requires``, each a conjunction of ``(attribute, value)`` pairs (``(("openable", True), ("isOpen",
    False))`` for ``placeon``: a receptacle that opens and is closed takes nothing, a counter that does not
    open always can). ``choices``: the words a ``text`` argument may take (e.g. the object types a search
    knows; compared ignoring case, spaces and ``_``); empty: any words. ``held_fits``: the attribute of the
    held object that lists the classes the named object may be (``placeon``: ``fitsIn``, the receptacle
    types the held object goes in or on); "" for no such rule.
    """

    name: str
    description: str
    required: bool = True
    kind: ParameterKind = "object"
    requires: tuple[tuple[str, Any], ...] = ()
    choices: tuple[str, ...] = ()
    excludes: tuple[tuple[tuple[str, Any], ...], ...] = ()
    held_fits: str = ""

    def fits(self, class_name: str | None, held: Mapping[str, Any] | None) -> bool:
        """Whether an object of class ``class_name`` may be named while the robot holds an object with
        attributes ``held`` (``held_fits``; True without the rule, False when the held object does not list
        its classes or the class is unknown)."""
        if not self.held_fits:
            return True
        listed = (held or {}).get(self.held_fits)
        return class_name is not None and isinstance(listed, (list, tuple)) and class_name in listed

    def allows(self, attributes: Mapping[str, Any]) -> bool:
        """Whether an object with ``attributes`` satisfies ``requires`` (a missing attribute does not) and
        shows none of the ``excludes`` states."""
        return all(k in attributes and attributes[k] == v for k, v in self.requires) and not self.excluded_by(
            attributes
        )

    def excluded_by(self, attributes: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
        """The first ``excludes`` state an object with ``attributes`` shows in full, ``()`` for none."""
        for state in self.excludes:
            if state and all(k in attributes and attributes[k] == v for k, v in state):
                return state
        return ()


@dataclass(frozen=True, slots=True)
class ActionSpec:
    """A planner-callable action: its name, what it does (shown to the model), its string arguments and
    what the robot's hand must hold (``hand``: ``any``, ``empty`` or ``holding`` an object;
    ``held_requires``: ``(attribute, value)`` pairs the held object must show, e.g. a held knife for
    ``slice``)."""

    name: str
    description: str
    parameters: tuple[ActionParameter, ...] = ()
    hand: HandRule = "any"
    held_requires: tuple[tuple[str, Any], ...] = ()

    def hand_allows(self, held: Mapping[str, Any] | None) -> bool:
        """Whether the robot's hand suits the action: ``held`` is the held object's attributes (None: the
        hand is empty; a missing attribute does not satisfy ``held_requires``)."""
        if self.hand == "empty":
            return held is None
        if self.hand == "holding" and held is None:
            return False
        if self.held_requires:
            return held is not None and all(k in held and held[k] == v for k, v in self.held_requires)
        return True

    def json_schema(self) -> dict[str, Any]:
        """JSON schema of the arguments object (every argument a string)."""
        return {
            "type": "object",
            "properties": {p.name: {"type": "string", "description": p.description} for p in self.parameters},
            "required": [p.name for p in self.parameters if p.required],
            "additionalProperties": False,
        }

    def signature(self) -> str:
        """``name(arg, optional?)`` for a prompt line."""
        args = ", ".join(p.name if p.required else f"{p.name}?" for p in self.parameters)
        return f"{self.name}({args})"


@dataclass(frozen=True)
class EnvironmentSpec:
    """What a planner is told about an environment before an episode: the actions it may call (in the
    order they are offered) and the attribute names its objects carry; ``agent_relative_attributes`` are
    those that depend on the robot's pose (``visible``, ``distance``, ...), which self-queries do not filter
    on; ``instructions`` open the planner's system prompt (the robot, the world and its rules);
    ``shown_attributes``: attributes every object line of a task subgraph shows whatever the task (e.g.
    whether the object is within reach); ``example``: a reply for the prompt's format example as
    ``(thought, objects the thought is about, action call)`` (empty: a generic one is made from the first
    action); ``walkthrough``: a short example episode of another task, ``walkthrough_task``, as steps
    ``(thought, objects, action call, what the environment answered)``, whose replies end the system prompt
    when the planner asks for it (``PlannerConfig.walkthrough``; the answers are not shown: they would cost
    every call tokens); ``reversals``: ``(action, reversed)`` pairs, an
    action that puts back what ``reversed`` changed when it names the same objects (``close`` reverses
    ``open``; ``placeon`` reverses ``pickup`` when it names the receptacle the object was taken from), so
    the planner can refuse a call that would only undo the robot's last change
    (``PlannerConfig.refuse_undo``); ``discoveries_marker``: the words with which an answer starts listing
    the objects the action happened to discover (its tail; the history shows how many instead, and answers
    are compared without it); ``state_capabilities``: ``(state, capability)`` attribute pairs, a state that
    means nothing for an object without the capability (``isOpen`` of an object that does not open), which
    a task subgraph does not show for such objects; ``hidden_attributes``: attributes object nodes carry
    for the affordance rules only (``held_fits``, ``held_requires``, ``excludes``), which no prompt shows."""

    actions: tuple[ActionSpec, ...]
    attribute_names: tuple[str, ...]
    agent_relative_attributes: frozenset[str] = frozenset()
    instructions: str = DEFAULT_INSTRUCTIONS
    shown_attributes: tuple[str, ...] = ()
    example: tuple[str, str, str] = ()
    walkthrough_task: str = ""
    walkthrough: tuple[tuple[str, str, str, str], ...] = ()
    reversals: tuple[tuple[str, str], ...] = ()
    discoveries_marker: str = ""
    state_capabilities: tuple[tuple[str, str], ...] = ()
    hidden_attributes: tuple[str, ...] = ()

    def reply_example(self) -> tuple[str, str, str]:
        """``example``, or a generic one naming the first action."""
        if self.example:
            return self.example
        first = self.actions[0]
        call = f"{first.name}({', '.join(f'<{p.name}>' for p in first.parameters)})"
        return ("<what you know and what to do next>", "none", call)

    def __post_init__(self) -> None:
        names = [a.name for a in self.actions]
        if not names:
            raise EmbodiedConfigError("an environment needs at least one action")
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise EmbodiedConfigError(f"action names must be unique, repeated: {repeated}")
        if DONE_ACTION in names:
            raise EmbodiedConfigError(f"{DONE_ACTION!r} is the planner's own action, not an environment's")
        if not self.attribute_names:
            raise EmbodiedConfigError("an environment needs the list of its object attribute names")
        object.__setattr__(self, "actions", tuple(self.actions))
        object.__setattr__(self, "attribute_names", tuple(self.attribute_names))
        object.__setattr__(self, "agent_relative_attributes", frozenset(self.agent_relative_attributes))
        object.__setattr__(self, "shown_attributes", tuple(self.shown_attributes))
        object.__setattr__(self, "hidden_attributes", tuple(self.hidden_attributes))
        object.__setattr__(self, "example", tuple(self.example))
        if self.example and len(self.example) != 3:
            raise EmbodiedConfigError("example is (thought, objects, action call)")
        object.__setattr__(self, "walkthrough", tuple(tuple(step) for step in self.walkthrough))
        if any(len(step) != 4 for step in self.walkthrough) or (
            self.walkthrough and not self.walkthrough_task
        ):
            raise EmbodiedConfigError(
                "walkthrough steps are (thought, objects, action call, answer), with a walkthrough_task"
            )
        unknown = [a for a in self.shown_attributes if a not in self.attribute_names]
        if unknown:
            raise EmbodiedConfigError(f"shown_attributes are not attribute names: {unknown}")
        object.__setattr__(self, "reversals", tuple((str(a), str(b)) for a, b in self.reversals))
        strangers = sorted({n for pair in self.reversals for n in pair if n not in names})
        if strangers:
            raise EmbodiedConfigError(
                f"reversals name actions the environment does not have: {strangers}",
                hint="pairs are (action, the action it reverses), both among the spec's actions",
            )

        object.__setattr__(
            self, "state_capabilities", tuple((str(a), str(b)) for a, b in self.state_capabilities)
        )
        foreign = sorted(
            {n for pair in self.state_capabilities for n in pair if n not in self.attribute_names}
        )
        if foreign:
            raise EmbodiedConfigError(
                f"state_capabilities name unknown attributes: {foreign}",
                hint="pairs are (state attribute, capability attribute), both among attribute_names",
            )

    def reversing(self, action: str) -> tuple[str, ...]:
        """The actions that reverse ``action`` (``open`` -> ``("close",)``), from ``reversals``."""
        return tuple(a for a, reversed_ in self.reversals if reversed_ == action)

    def action(self, name: str) -> ActionSpec | None:
        """The action called ``name`` (None when there is none)."""
        return next((a for a in self.actions if a.name == name), None)

    @property
    def filterable_attributes(self) -> tuple[str, ...]:
        """Attribute names a retrieval filter may test (the agent-relative ones excluded)."""
        return tuple(a for a in self.attribute_names if a not in self.agent_relative_attributes)


class ActionOutcome(Protocol):
    """What executing one action returned. An outcome may also carry ``error``: a short code of why it
    failed (``out_of_reach``, ...), which the planner records as the failure's cause, ``mentions``: the
    ids of the discovered objects its message is about (the object found, the receptacle to open first, the
    switch to turn on), which retrieving agents add to the next step's subgraph, and ``discovered``: the
    ids of the objects the action newly discovered (listed after ``EnvironmentSpec.discoveries_marker``)."""

    @property
    def success(self) -> bool: ...

    @property
    def message(self) -> str: ...


class GraphChanges(Protocol):
    """What changed in the robot's scene graph between two observations."""

    @property
    def removed_nodes(self) -> Sequence[str]: ...

    @property
    def is_empty(self) -> bool: ...

    def touched_nodes(self) -> set[str]:
        """Nodes whose document (own fields or incident edges) needs re-indexing, removed ones excluded."""
        ...


class EmbodiedTask(Protocol):
    """A task of an episode; ``check(world)`` says whether it holds in the environment's true state."""

    @property
    def task_id(self) -> str: ...

    @property
    def difficulty(self) -> str: ...

    @property
    def instruction(self) -> str: ...

    @property
    def required_types(self) -> Sequence[str]: ...

    def check(self, world: Any) -> bool: ...


class Environment(Protocol):
    """One episode's environment as the planner sees it (see the module contract); ``layout`` and
    ``n_distractors`` only label the episode's records, ``world`` is what ``EmbodiedTask.check`` reads."""

    @property
    def layout(self) -> str: ...

    @property
    def n_distractors(self) -> int: ...

    @property
    def world(self) -> Any: ...

    def execute(self, action: str, arguments: Mapping[str, str]) -> ActionOutcome: ...

    def observe(self) -> tuple[SceneGraph, GraphChanges]: ...


__all__ = [
    "DEFAULT_INSTRUCTIONS",
    "DONE_ACTION",
    "HOLDS",
    "ActionOutcome",
    "ActionParameter",
    "ActionSpec",
    "EmbodiedTask",
    "Environment",
    "EnvironmentSpec",
    "GraphChanges",
    "HandRule",
    "ParameterKind",
]
