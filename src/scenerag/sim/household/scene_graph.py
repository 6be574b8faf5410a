"""The agent's discovered kitchen as a ``scenerag.graph.SceneGraph``, and incremental diffs between snapshots.

Contract: ``export_scene_graph(env)`` holds one ``Room`` (``R0``, the kitchen), a ``Place`` per known
standing point (``P<i>``, ``PLACE_CONNECTED`` within 1.2 m), the ``Agent`` (``A0``, contained by its place,
``HOLDS`` its held object) and an ``Object`` per discovered object (``class`` = AI2Thor type, the 28
attributes plus ``objectId``, ``receptacle`` and the type's ``AFFORDANCE_ATTRIBUTES`` as node attributes, values as last observed; a null value
such as an empty container's ``fillLiquid`` is exported as the string ``"none"`` so that every attribute
exists as a property in a graph database, where nulls are not stored). Containment is
``(receptacle)-[:CONTAINS]->(object)``; top-level objects hang off the place in front of them.
``diff_scene_graphs(old, new)`` lists added/changed/removed nodes and edges; ``SceneGraphTracker`` keeps the
last snapshot so a vector index can re-embed only what changed while the robot acts.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from scenerag.graph import ontology as ont
from scenerag.graph.model import Node, SceneGraph
from scenerag.sim.household.attributes import AGENT_RELATIVE_ATTRIBUTES

if TYPE_CHECKING:
    from scenerag.sim.household.env import HouseholdEnv

ROOM_SYMBOL = "R0"
AGENT_SYMBOL = "A0"
HOLDS = "HOLDS"
PLACE_LINK_M = 1.2
NONE = "none"  # exported in place of null attribute values
EdgeKey = tuple[str, str, str]  # (source, type, target), as ``Edge.key``


def _describe(env: HouseholdEnv, object_id: str, attributes: Mapping[str, Any]) -> str:
    """A one-line, retrieval-friendly description of what the agent knows about an object."""
    seen = env.discovered[object_id]
    parts = [f"{seen.object_type} {object_id}"]
    if seen.held:
        parts.append("held by the robot")
    elif seen.parent is not None:
        kind = env.world.objects[seen.parent].spec.receptacle
        parts.append(f"{'on' if kind is not None and kind.kind == 'surface' else 'in'} {seen.parent}")
    flags = [
        ("isOpen", "open"),
        ("isToggled", "switched on"),
        ("isDirty", "dirty"),
        ("isCooked", "cooked"),
        ("isSliced", "sliced"),
        ("isBroken", "broken"),
        ("isUsedUp", "used up"),
    ]
    parts.extend(text for key, text in flags if attributes[key] is True)
    if attributes["isFilledWithLiquid"]:
        parts.append(f"filled with {attributes['fillLiquid']}")
    if attributes["temperature"] != "RoomTemp":
        parts.append(str(attributes["temperature"]).lower())
    return ", ".join(parts)


def export_scene_graph(env: HouseholdEnv) -> SceneGraph:
    """Snapshot of everything the agent has discovered so far (see the module contract)."""
    world = env.world
    width, depth = world.room_size
    graph = SceneGraph(
        metadata={
            "generator": "household",
            "layout": world.name,
            "style": env.config.style,
            "seed": env.config.seed,
            "n_distractors": env.config.n_distractors,
            "step": env.step_count,
        }
    )
    graph.add_node(
        Node(
            ROOM_SYMBOL,
            ont.ROOM,
            "kitchen",
            (width / 2, depth / 2, 0.0),
            bbox_center=(width / 2, depth / 2, 1.25),
            bbox_dim=(width, depth, 2.5),
            description="the kitchen",
        ),
        validate=False,
    )
    places = sorted(env.known_places)
    for index in places:
        place = world.places[index]
        graph.add_node(
            Node(
                place.symbol,
                ont.PLACE,
                "place",
                place.position,
                attributes={
                    "kind": place.kind,
                    "visited": index in env.visited_places,
                },
            ),
            validate=False,
        )
        graph.add_edge(ROOM_SYMBOL, place.symbol, ont.CONTAINS, validate=False)
    for i, a in enumerate(places):
        for b in places[i + 1 :]:
            if math.dist(world.places[a].position, world.places[b].position) <= PLACE_LINK_M:
                graph.add_edge(
                    world.places[a].symbol, world.places[b].symbol, ont.PLACE_CONNECTED, validate=False
                )

    agent_place = world.places[world.agent.place]
    graph.add_node(
        Node(
            AGENT_SYMBOL,
            ont.AGENT,
            "robot",
            world.agent_position(),
            attributes={
                "place": agent_place.symbol,
                "heading_deg": round(math.degrees(world.agent.heading), 1),
                "holding": world.agent.held or NONE,
            },
            description="the robot (single-arm mobile manipulator)",
        ),
        validate=False,
    )
    graph.add_edge(agent_place.symbol, AGENT_SYMBOL, ont.CONTAINS, validate=False)

    for object_id, seen in env.discovered.items():
        attributes = env.observed_attributes(object_id)
        obj = world.objects[object_id]
        node_attributes = {k: NONE if v is None else v for k, v in attributes.items()}
        node_attributes.update(objectId=object_id, receptacle=obj.spec.is_receptacle)
        node_attributes.update(obj.spec.affordance_facts())
        graph.add_node(
            Node(
                seen.symbol,
                ont.OBJECT,
                seen.object_type,
                seen.position,
                bbox_center=seen.position,
                bbox_dim=obj.extent,
                description=_describe(env, object_id, attributes),
                attributes=node_attributes,
            ),
            validate=False,
        )
    for object_id, seen in env.discovered.items():
        if seen.held:
            graph.add_edge(AGENT_SYMBOL, seen.symbol, HOLDS, validate=False)
        elif seen.parent is not None and seen.parent in env.discovered:
            graph.add_edge(env.discovered[seen.parent].symbol, seen.symbol, ont.CONTAINS, validate=False)
        elif seen.parent is None:
            home = world.places[world.place_of(object_id)]
            if home.index in env.known_places:
                graph.add_edge(home.symbol, seen.symbol, ont.CONTAINS, validate=False)
    return graph


@dataclass(frozen=True)
class SceneGraphDiff:
    """What changed between two snapshots. ``changed_nodes`` maps a symbol to the names of the fields
    (``class``, ``center``, ``description``, ...) or attributes that differ."""

    added_nodes: tuple[str, ...] = ()
    changed_nodes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    removed_nodes: tuple[str, ...] = ()
    added_edges: tuple[EdgeKey, ...] = ()
    removed_edges: tuple[EdgeKey, ...] = ()

    @property
    def is_empty(self) -> bool:
        return not (
            self.added_nodes
            or self.changed_nodes
            or self.removed_nodes
            or self.added_edges
            or self.removed_edges
        )

    def touched_nodes(self) -> set[str]:
        """Nodes whose document (own fields or incident edges) needs re-indexing, removed ones excluded."""
        touched = set(self.added_nodes) | set(self.changed_nodes)
        for source, _, target in (*self.added_edges, *self.removed_edges):
            touched.update((source, target))
        return touched - set(self.removed_nodes)

    def summary(self) -> str:
        return (
            f"+{len(self.added_nodes)} ~{len(self.changed_nodes)} -{len(self.removed_nodes)} nodes, "
            f"+{len(self.added_edges)} -{len(self.removed_edges)} edges"
        )


def _node_fields(node: Node, ignore: frozenset[str]) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "label": node.label,
        ont.CLASS_KEY: node.class_name,
        ont.CENTER_KEY: node.position,
        ont.BBOX_CENTER_KEY: node.bbox_center,
        ont.BBOX_DIM_KEY: node.bbox_dim,
        ont.DESCRIPTION_KEY: node.description,
    }
    fields.update((k, v) for k, v in node.attributes.items() if k not in ignore)
    return fields


def diff_scene_graphs(
    old: SceneGraph | None, new: SceneGraph, *, ignore_attributes: Iterable[str] = ()
) -> SceneGraphDiff:
    """Nodes and edges added, changed or removed from ``old`` (None: empty) to ``new``."""
    ignore = frozenset(ignore_attributes)
    old_nodes = {n.symbol: n for n in old.nodes()} if old is not None else {}
    new_nodes = {n.symbol: n for n in new.nodes()}
    changed: dict[str, tuple[str, ...]] = {}
    for symbol in old_nodes.keys() & new_nodes.keys():
        before = _node_fields(old_nodes[symbol], ignore)
        after = _node_fields(new_nodes[symbol], ignore)
        keys = tuple(sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k)))
        if keys:
            changed[symbol] = keys
    old_edges = {e.key for e in old.edges()} if old is not None else set()
    new_edges = {e.key for e in new.edges()}
    return SceneGraphDiff(
        added_nodes=tuple(s for s in new_nodes if s not in old_nodes),
        changed_nodes=dict(sorted(changed.items())),
        removed_nodes=tuple(s for s in old_nodes if s not in new_nodes),
        added_edges=tuple(sorted(new_edges - old_edges)),
        removed_edges=tuple(sorted(old_edges - new_edges)),
    )


class SceneGraphTracker:
    """Follows an environment's discovered scene graph; ``update()`` returns the graph and the diff since
    the previous ``update()``. Agent-relative attributes (``visible``, ``isInteractable``, ``distance``) are
    ignored by default: they change with every step of the robot, not with the world."""

    def __init__(
        self, env: HouseholdEnv, *, ignore_attributes: Iterable[str] = AGENT_RELATIVE_ATTRIBUTES
    ) -> None:
        self.env = env
        self.ignore_attributes = frozenset(ignore_attributes)
        self.graph: SceneGraph | None = None

    def update(self) -> tuple[SceneGraph, SceneGraphDiff]:
        graph = export_scene_graph(self.env)
        diff = diff_scene_graphs(self.graph, graph, ignore_attributes=self.ignore_attributes)
        self.graph = graph
        return graph, diff
