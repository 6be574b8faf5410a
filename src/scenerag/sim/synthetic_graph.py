"""KeySG-shaped scene graphs of any size without rendering (floors, typed rooms with summaries, objects
with colour/class/size descriptions, keyframes with view descriptions): the graphs retrieval latency is
measured on.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from scenerag.graph import ontology as ont
from scenerag.graph.model import SceneGraph
from scenerag.retrieval.documents import label_text
from scenerag.sim.building import OBJECT_CLASSES, PALETTE, ROOM_TYPES


def synthetic_scene_graph(
    n_objects: int = 10_000,
    n_keyframes: int = 5_000,
    *,
    n_floors: int = 10,
    rooms_per_floor: int = 20,
    seed: int = 0,
) -> SceneGraph:
    """A KeySG-shaped graph of the given size without rendering: floors, typed rooms with summaries,
    objects with colour/class/size descriptions and keyframes with view descriptions, in random rooms."""
    rng = np.random.default_rng(seed)
    colours = [label_text(c) for c in PALETTE]
    g = SceneGraph(metadata={"generator": "scenerag.sim.synthetic_graph.synthetic_scene_graph"})
    g.add("B0", ont.BUILDING, "building", (0.0, 0.0, 1.5 * n_floors))
    rooms: list[tuple[str, str, int, np.ndarray]] = []
    counts: Counter[str] = Counter()
    for f in range(n_floors):
        g.add(
            f"F{f}",
            ont.FLOOR,
            "floor",
            (0.0, 0.0, 3.0 * f + 1.4),
            level=f,
            name=f"floor {f}",
            description=f"Floor {f} with {rooms_per_floor} rooms.",
        )
        g.add_edge("B0", f"F{f}", ont.CONTAINS)
        for r in range(rooms_per_floor):
            rtype = ROOM_TYPES[int(rng.integers(len(ROOM_TYPES)))]
            counts[rtype] += 1
            symbol = f"R{f * rooms_per_floor + r}"
            center = np.array([6.0 * r, 6.0 * (f % 2), 3.0 * f + 1.4])
            rooms.append((symbol, rtype, f, center))
            g.add(
                symbol,
                ont.ROOM,
                rtype,
                tuple(center),
                floor_level=f,
                name=f"{label_text(rtype)} {counts[rtype]}",
                description=f"A {label_text(rtype)} on floor {f} of about {int(rng.integers(8, 30))} m².",
            )
            g.add_edge(f"F{f}", symbol, ont.CONTAINS)
    for i in range(n_objects):
        symbol, rtype, f, center = rooms[int(rng.integers(len(rooms)))]
        cls = OBJECT_CLASSES[int(rng.integers(len(OBJECT_CLASSES)))]
        colour = colours[int(rng.integers(len(colours)))]
        size = np.round(rng.uniform(0.1, 1.5, 3), 1)
        pos = center + np.append(rng.uniform(-2.5, 2.5, 2), rng.uniform(-1.0, 1.0))
        g.add(
            f"O{i}",
            ont.OBJECT,
            cls,
            tuple(pos),
            bbox_center=tuple(pos),
            bbox_dim=tuple(size),
            color=colour,
            room=symbol,
            floor_level=f,
            description=f"{colour} {label_text(cls)} ({size[0]:.1f} x {size[1]:.1f} x {size[2]:.1f} m) in the {label_text(rtype)}",
        )
        g.add_edge(symbol, f"O{i}", ont.CONTAINS)
    for i in range(n_keyframes):
        symbol, rtype, f, center = rooms[int(rng.integers(len(rooms)))]
        seen = [label_text(OBJECT_CLASSES[int(rng.integers(len(OBJECT_CLASSES)))]) for _ in range(3)]
        g.add(
            f"K{i}",
            ont.KEYFRAME,
            "keyframe",
            tuple(center),
            room=symbol,
            floor_level=f,
            description=f"View on floor {f} in the {label_text(rtype)}. Visible: a {seen[0]}, a {seen[1]}, a {seen[2]}.",
        )
        g.add_edge(symbol, f"K{i}", ont.CONTAINS)
    return g


__all__ = ["synthetic_scene_graph"]
