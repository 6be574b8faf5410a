"""The symbolic world a planner needs from a scene graph: places the robot drives between, rooms, objects.

Contract: :meth:`NavigationGraph.from_scene_graph` reads one place layer (``MeshPlace`` or ``Place``;
by default the one with more within-layer ``*_CONNECTED`` edges) as an undirected graph; a place's
rooms are its ``Room -[:CONTAINS]->`` parents (or, when the rooms contain the other place layer, the
rooms of the nearest place of that layer, as Heracles does); every object lies at exactly one place:
its nearest ``CONTAINS`` parent in the layer, else the nearest place by position.
:func:`resolve_start` turns a place symbol, an ``x, y, z`` position or the graph's ``Agent`` into a place.
"""

from __future__ import annotations

import math
import re
from collections import deque
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from scenerag.graph import ontology as ont
from scenerag.graph.model import SceneGraph, Vec3
from scenerag.planning.domain import PlanningError

PLACE_LABELS: tuple[str, ...] = (ont.MESH_PLACE, ont.PLACE)
_INDEX = re.compile(r"(\d+)$")

StartSpec = str | Sequence[float] | None
"""A start: a node symbol (place, agent, object), an ``(x, y, z)`` position, or None for the Agent."""


@dataclass(frozen=True)
class RoomInfo:
    """A room (Heracles region) and the navigation places it contains."""

    symbol: str
    class_name: str
    places: tuple[str, ...]


@dataclass(frozen=True)
class ObjectInfo:
    """An object and the one navigation place it lies at."""

    symbol: str
    class_name: str
    position: Vec3
    place: str


@dataclass
class NavigationGraph:
    """Places (with positions and undirected adjacency), rooms and objects of one scene graph."""

    place_label: str
    positions: dict[str, Vec3]
    neighbors: dict[str, list[str]]
    place_rooms: dict[str, tuple[str, ...]]
    rooms: dict[str, RoomInfo]
    objects: dict[str, ObjectInfo]
    _tree: object | None = field(default=None, repr=False)
    _tree_symbols: list[str] = field(default_factory=list, repr=False)

    # -- construction -----------------------------------------------------------------------------
    @classmethod
    def from_scene_graph(
        cls,
        graph: SceneGraph,
        *,
        place_label: str | None = None,
        objects: Collection[str] | None = None,
    ) -> NavigationGraph:
        """Read the navigation world of ``graph``; ``objects`` limits which objects are located (all by default)."""
        label = place_label or choose_place_label(graph)
        positions = {n.symbol: n.position for n in graph.nodes(label)}
        if not positions:
            present = ", ".join(f"{k} {v}" for k, v in sorted(graph.label_counts().items())) or "nothing"
            raise PlanningError(
                f"the scene graph has no {label} nodes to plan over (it has {present})",
                hint="planning needs Place or MeshPlace nodes joined by *_CONNECTED edges",
            )
        neighbors: dict[str, list[str]] = {p: [] for p in positions}
        room_members: dict[str, list[str]] = {r.symbol: [] for r in graph.nodes(ont.ROOM)}
        place_rooms: dict[str, list[str]] = {}
        object_parents: dict[str, list[str]] = {}
        other_rooms: dict[str, list[str]] = {}  # rooms of places of the other place layer
        other_label = next((o for o in PLACE_LABELS if o != label), None)
        for edge in graph.edges():
            source, target = edge.source, edge.target
            if edge.type.endswith("_CONNECTED"):
                if source in positions and target in positions:
                    neighbors[source].append(target)
                    neighbors[target].append(source)
            elif edge.type == ont.CONTAINS:
                if source in room_members:
                    if target in positions:
                        room_members[source].append(target)
                        place_rooms.setdefault(target, []).append(source)
                    elif other_label is not None and graph.node(target).label == other_label:
                        other_rooms.setdefault(target, []).append(source)
                elif source in positions:
                    object_parents.setdefault(target, []).append(source)
        for place, adjacent in neighbors.items():
            neighbors[place] = list(dict.fromkeys(adjacent))

        nav = cls(label, positions, neighbors, {}, {}, {})
        if other_rooms and len(place_rooms) < len(positions):
            nav._adopt_rooms_of_nearest(graph, other_rooms, place_rooms, room_members)
        nav.place_rooms = {p: tuple(dict.fromkeys(rs)) for p, rs in place_rooms.items()}
        nav.rooms = {
            r.symbol: RoomInfo(r.symbol, r.class_name, tuple(dict.fromkeys(room_members[r.symbol])))
            for r in graph.nodes(ont.ROOM)
        }
        wanted = None if objects is None else set(objects)
        for node in graph.nodes(ont.OBJECT):
            if wanted is not None and node.symbol not in wanted:
                continue
            parents = object_parents.get(node.symbol, [])
            place = (
                min(parents, key=lambda p: math.dist(positions[p], node.position))
                if parents
                else nav.nearest_place(node.position)
            )
            nav.objects[node.symbol] = ObjectInfo(node.symbol, node.class_name, node.position, place)
        return nav

    def _adopt_rooms_of_nearest(
        self,
        graph: SceneGraph,
        other_rooms: Mapping[str, list[str]],
        place_rooms: dict[str, list[str]],
        room_members: dict[str, list[str]],
    ) -> None:
        """Give each roomless place the rooms of the nearest room-bearing place of the other layer."""
        from scipy.spatial import cKDTree

        others = list(other_rooms)
        tree = cKDTree([graph.node(s).position for s in others])
        orphans = [p for p in self.positions if p not in place_rooms]
        _, nearest = tree.query([self.positions[p] for p in orphans])
        for place, index in zip(orphans, nearest.tolist(), strict=True):
            for room in other_rooms[others[int(index)]]:
                place_rooms.setdefault(place, []).append(room)
                room_members[room].append(place)

    # -- queries ----------------------------------------------------------------------------------
    def nearest_place(self, position: Iterable[float]) -> str:
        """The place closest (3D Euclidean) to ``position``."""
        from scipy.spatial import cKDTree

        if self._tree is None:
            self._tree_symbols = list(self.positions)
            self._tree = cKDTree([self.positions[s] for s in self._tree_symbols])
        point = [float(v) for v in position]
        _, index = self._tree.query(point)  # type: ignore[attr-defined]
        return self._tree_symbols[int(index)]

    def room_places(self, room: str) -> tuple[str, ...]:
        return self.rooms[room].places

    def component(self, start: str, *, blocked: Collection[str] = ()) -> set[str]:
        """Places reachable from ``start`` without entering ``blocked`` places (``start`` itself is allowed)."""
        seen = {start}
        queue = deque([start])
        while queue:
            place = queue.popleft()
            for nxt in self.neighbors[place]:
                if nxt not in seen and nxt not in blocked:
                    seen.add(nxt)
                    queue.append(nxt)
        return seen

    def shortest_paths(
        self, source: str, targets: Sequence[Collection[str]], *, blocked: Collection[str] = ()
    ) -> list[list[str] | None]:
        """For each target set, a fewest-hops path from ``source`` to its nearest member (None if none).

        One breadth-first search serves all targets; ``blocked`` places are never entered (a blocked
        target member is unreachable unless it is ``source``).
        """
        parent: dict[str, str | None] = {source: None}
        pending = {i for i, t in enumerate(targets) if t}
        found: dict[int, str] = {}

        def settle(place: str) -> None:
            for i in [i for i in pending if place in targets[i]]:
                found[i] = place
                pending.discard(i)

        settle(source)
        queue = deque([source])
        while queue and pending:
            place = queue.popleft()
            for nxt in self.neighbors[place]:
                if nxt in parent or nxt in blocked:
                    continue
                parent[nxt] = place
                settle(nxt)
                queue.append(nxt)
        paths: list[list[str] | None] = []
        for i in range(len(targets)):
            end = found.get(i)
            if end is None:
                paths.append(None)
                continue
            path = [end]
            while (previous := parent[path[-1]]) is not None:
                path.append(previous)
            paths.append(path[::-1])
        return paths


def choose_place_label(graph: SceneGraph) -> str:
    """``MeshPlace`` or ``Place``: the layer with more within-layer ``*_CONNECTED`` edges (then more nodes)."""
    counts = graph.label_counts()
    edges = graph.edge_type_counts()
    candidates = [label for label in PLACE_LABELS if counts.get(label)]
    if not candidates:
        present = ", ".join(sorted(counts)) or "no nodes"
        raise PlanningError(
            f"the scene graph has no Place or MeshPlace nodes to plan over (labels: {present})",
            hint="import a graph with a places layer, or pass place_label= naming the layer to navigate",
        )
    return max(candidates, key=lambda label: (edges.get(ont.sibling_edge_type(label), 0), counts[label]))


def _symbol_index(symbol: str) -> int:
    match = _INDEX.search(symbol)
    return int(match.group(1)) if match else -1


def latest_agent(graph: SceneGraph) -> str | None:
    """The most recent ``Agent`` node: largest ``timestamp`` attribute, else largest symbol index."""
    agents = list(graph.nodes(ont.AGENT))
    if not agents:
        return None

    def recency(node: object) -> tuple[float, int]:
        stamp = node.attributes.get("timestamp")  # type: ignore[attr-defined]
        value = float(stamp) if isinstance(stamp, (int, float)) and not isinstance(stamp, bool) else -math.inf
        return (value, _symbol_index(node.symbol))  # type: ignore[attr-defined]

    return max(agents, key=recency).symbol


def resolve_start(graph: SceneGraph, nav: NavigationGraph, start: StartSpec = None) -> str:
    """The navigation place the robot starts at.

    ``start`` may be a place symbol of the navigation layer; another node's symbol (an ``Agent`` or a
    place of the other layer: its parent or nearest place; an ``Object``: the place it lies at); an
    ``(x, y, z)`` position (nearest place); or None: the parent place of the latest ``Agent`` node.
    """
    if start is None:
        agent = latest_agent(graph)
        if agent is None:
            raise PlanningError(
                "no start place given and the scene graph has no Agent node to start from",
                hint="pass start= a place symbol (e.g. the robot's current place) or an (x, y, z) position",
            )
        return _place_of_node(graph, nav, agent)
    if isinstance(start, str):
        if start in nav.positions:
            return start
        if start not in graph:
            folded = [s for s in nav.positions if s.casefold() == start.casefold()]
            if len(folded) == 1:
                return folded[0]
            raise PlanningError(
                f"start {start!r} is not a node of the scene graph",
                hint=f"pass a {nav.place_label} symbol, an Agent symbol or an (x, y, z) position",
            )
        return _place_of_node(graph, nav, start)
    try:
        point = [float(v) for v in start]
    except (TypeError, ValueError):
        raise PlanningError(
            f"start {start!r} is neither a symbol nor a position",
            hint="pass a place symbol such as P12 or three numbers x, y, z",
        ) from None
    if len(point) != 3 or not all(math.isfinite(v) for v in point):
        raise PlanningError(f"start position must be 3 finite numbers, got {start!r}")
    return nav.nearest_place(point)


def _place_of_node(graph: SceneGraph, nav: NavigationGraph, symbol: str) -> str:
    node = graph.node(symbol)
    if node.label == ont.OBJECT and symbol in nav.objects:
        return nav.objects[symbol].place
    parents = [p.symbol for p in graph.parents(symbol) if p.symbol in nav.positions]
    if parents:
        return min(parents, key=lambda p: math.dist(nav.positions[p], node.position))
    return nav.nearest_place(node.position)
