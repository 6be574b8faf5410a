"""Assembly of the KeySG hierarchy into a ``SceneGraph`` and loading it into a ``GraphStore``.

Contract: ``assemble_graph`` builds Building ``B0`` -CONTAINS-> floors ``F<k>`` -CONTAINS-> rooms
``R<i>`` -CONTAINS-> objects ``O<n>`` -HAS_ELEMENT-> functional elements ``E<n>`` (an element with no
parent object hangs off its room by CONTAINS), and keyframes ``K<frame>`` (room -CONTAINS-> keyframe,
keyframe -SEES-> every object it sees, with ``visible_fraction``). Descriptions and summaries go into
``description``; keyframes carry their pose (position, quaternion ``[x, y, z, w]``, heading, pitch and
the row-major camera-to-world matrix, OpenCV axes); objects name their best view (``best_view_keyframe``
and the mask box). Rooms the camera moved between directly get ``ROOM_CONNECTED`` (``via='trajectory'``).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scenerag.build.describe import ObjectFacts, spatial_relations
from scenerag.build.floors import FloorSegment
from scenerag.build.objects import MapObject
from scenerag.build.rooms import RoomSegment
from scenerag.build.segmentation import KIND_FUNCTIONAL
from scenerag.graph import ontology as ont
from scenerag.graph.model import SceneGraph


@dataclass
class GraphInputs:
    """Everything the assembly needs, produced by the earlier stages."""

    floors: list[FloorSegment]
    rooms: list[RoomSegment]
    objects: dict[int, MapObject]
    keyframes: dict[int, int]  # frame -> room
    poses: dict[int, np.ndarray]  # frame -> camera-to-world
    visibility: dict[int, dict[int, float]]  # frame -> {object uid: fraction}
    keyframe_descriptions: dict[int, str]
    room_types: dict[int, str]
    room_summaries: dict[int, str]
    floor_summaries: dict[int, str]
    building_summary: str
    room_transitions: list[tuple[int, int]] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)


def object_symbol(obj: MapObject) -> str:
    return f"E{obj.uid}" if obj.kind == KIND_FUNCTIONAL else f"O{obj.uid}"


def object_facts(obj: MapObject) -> ObjectFacts:
    """The describer's view of a map object (colour from the segmenter's votes, else measured)."""
    from scenerag.build.describe import color_name

    color = obj.attribute("color") or (color_name(obj.colors.mean(axis=0)) if len(obj.colors) else "")
    return ObjectFacts(
        obj.uid,
        object_symbol(obj),
        obj.label,
        obj.kind,
        color.replace("_", " "),
        obj.bbox_min.astype(np.float64),
        obj.bbox_max.astype(np.float64),
        obj.parent,
    )


def _r(values: Any, nd: int = 4) -> list[float]:
    return [round(float(v), nd) for v in values]


def _quaternion(rot: np.ndarray) -> list[float]:
    from scipy.spatial.transform import Rotation

    q = Rotation.from_matrix(rot).as_quat()
    return _r(q if q[3] >= 0 else -q, 6)


def assemble_graph(inputs: GraphInputs) -> SceneGraph:
    """The hierarchical scene graph (see module docstring)."""
    g = SceneGraph(metadata={"generator": "scenerag.build", **inputs.metadata})
    rooms = inputs.rooms
    if rooms:
        all_xy = np.concatenate([r.polygon for r in rooms if len(r.polygon)])
        lo, hi = all_xy.min(axis=0), all_xy.max(axis=0)
    else:
        lo, hi = np.zeros(2), np.zeros(2)
    z0 = min((f.z_floor for f in inputs.floors), default=0.0)
    z1 = max((f.z_ceiling for f in inputs.floors), default=0.0)
    cx, cy = (lo + hi) / 2.0
    g.add(
        "B0",
        ont.BUILDING,
        "building",
        (cx, cy, (z0 + z1) / 2),
        bbox_center=(cx, cy, (z0 + z1) / 2),
        bbox_dim=(float(hi[0] - lo[0]), float(hi[1] - lo[1]), z1 - z0),
        description=inputs.building_summary or None,
        n_floors=len(inputs.floors),
        n_rooms=len(rooms),
    )
    for fl in inputs.floors:
        zc = (fl.z_floor + fl.z_ceiling) / 2
        g.add(
            fl.symbol,
            ont.FLOOR,
            "floor",
            (cx, cy, zc),
            bbox_center=(cx, cy, zc),
            bbox_dim=(float(hi[0] - lo[0]), float(hi[1] - lo[1]), fl.clear_height),
            description=inputs.floor_summaries.get(fl.index) or None,
            level=fl.index,
            z_min=round(fl.z_floor, 4),
            z_max=round(fl.z_ceiling, 4),
            name=f"floor {fl.index}",
        )
        g.add_edge("B0", fl.symbol, ont.CONTAINS)
    type_counts: Counter[str] = Counter()
    keyframes_per_room = Counter(inputs.keyframes.values())
    for room in rooms:
        rtype = inputs.room_types.get(room.index, "room")
        type_counts[rtype] += 1
        rlo, rhi = room.polygon.min(axis=0), room.polygon.max(axis=0)
        zc = (room.z_min + room.z_max) / 2
        g.add(
            room.symbol,
            ont.ROOM,
            rtype,
            (room.centroid[0], room.centroid[1], zc),
            bbox_center=((rlo[0] + rhi[0]) / 2, (rlo[1] + rhi[1]) / 2, zc),
            bbox_dim=(float(rhi[0] - rlo[0]), float(rhi[1] - rlo[1]), room.z_max - room.z_min),
            description=inputs.room_summaries.get(room.index) or None,
            name=f"{rtype.replace('_', ' ')} {type_counts[rtype]}",
            floor_level=room.floor,
            polygon_xy=_r(room.polygon.ravel()),
            area_m2=round(room.area, 3),
            volume_m3=round(room.area * (room.z_max - room.z_min), 3),
            z_min=round(room.z_min, 4),
            z_max=round(room.z_max, 4),
            n_keyframes=int(keyframes_per_room.get(room.index, 0)),
        )
        g.add_edge(f"F{room.floor}", room.symbol, ont.CONTAINS)
    seen_pairs = set()
    for a, b in inputs.room_transitions:
        if (
            a != b
            and (min(a, b), max(a, b)) not in seen_pairs
            and 0 <= a < len(rooms)
            and 0 <= b < len(rooms)
        ):
            seen_pairs.add((min(a, b), max(a, b)))
            via = "trajectory" if rooms[a].floor == rooms[b].floor else "trajectory_between_floors"
            g.add_edge(rooms[a].symbol, rooms[b].symbol, ont.ROOM_CONNECTED, via=via)

    facts = {u: object_facts(o) for u, o in inputs.objects.items()}
    descriptions = _object_descriptions(inputs, facts)
    for obj in sorted(inputs.objects.values(), key=lambda o: (o.kind == KIND_FUNCTIONAL, o.uid)):
        if not len(obj.points):
            continue
        f = facts[obj.uid]
        best = obj.best_view
        room = rooms[obj.room] if 0 <= obj.room < len(rooms) else None
        attrs: dict[str, Any] = {
            "color": f.color,
            "color_rgb": [int(v) for v in obj.colors.mean(axis=0).round()],
            "n_points": len(obj.points),
            "n_views": len(obj.observations),
            "confidence": round(obj.confidence, 4),
            "floor_level": room.floor if room is not None else -1,
            "room": room.symbol if room is not None else "",
            "kind": obj.kind,
        }
        if best is not None:
            attrs["best_view"] = int(best.frame)
            attrs["best_view_keyframe"] = f"K{int(best.frame)}"
            attrs["best_view_bbox"] = [int(v) for v in best.bbox]
        label = ont.FUNCTIONAL_ELEMENT if obj.kind == KIND_FUNCTIONAL else ont.OBJECT
        center = _r(f.center)
        g.add(
            f.symbol,
            label,
            obj.label.replace(" ", "_"),
            center,
            bbox_center=center,
            bbox_dim=_r(f.size),
            description=descriptions.get(obj.uid),
            **attrs,
        )
    for obj in inputs.objects.values():
        if not len(obj.points):
            continue
        sym = object_symbol(obj)
        room = rooms[obj.room] if 0 <= obj.room < len(rooms) else None
        parent = inputs.objects.get(obj.parent) if obj.parent is not None else None
        if obj.kind == KIND_FUNCTIONAL and parent is not None and object_symbol(parent) in g:
            g.add_edge(object_symbol(parent), sym, ont.HAS_ELEMENT)
        elif room is not None:
            g.add_edge(room.symbol, sym, ont.CONTAINS)
    for frame, room_index in sorted(inputs.keyframes.items()):
        pose = inputs.poses[frame]
        fwd = pose[:3, 2]
        room = rooms[room_index] if 0 <= room_index < len(rooms) else None
        sym = f"K{frame}"
        g.add(
            sym,
            ont.KEYFRAME,
            "keyframe",
            _r(pose[:3, 3]),
            description=inputs.keyframe_descriptions.get(frame) or None,
            frame_index=int(frame),
            quaternion_xyzw=_quaternion(pose[:3, :3]),
            pose_cam_to_world=_r(pose.ravel(), 6),
            heading_deg=round(math.degrees(math.atan2(fwd[1], fwd[0])) % 360.0, 2),
            pitch_deg=round(math.degrees(math.asin(float(np.clip(fwd[2], -1.0, 1.0)))), 2),
            floor_level=room.floor if room is not None else -1,
            room=room.symbol if room is not None else "",
        )
        if room is not None:
            g.add_edge(room.symbol, sym, ont.CONTAINS)
        for uid, frac in sorted(inputs.visibility.get(frame, {}).items()):
            obj = inputs.objects.get(uid)
            if obj is not None and object_symbol(obj) in g:
                g.add_edge(sym, object_symbol(obj), ont.SEES, visible_fraction=float(frac))
    return g


def _object_descriptions(inputs: GraphInputs, facts: dict[int, ObjectFacts]) -> dict[int, str]:
    """``"<colour> <class> (w x d x h m) in the <room>, on the <support>, next to the <neighbour>"``."""
    by_room: dict[int, list[ObjectFacts]] = {}
    for uid, obj in inputs.objects.items():
        by_room.setdefault(obj.room, []).append(facts[uid])
    out: dict[int, str] = {}
    type_counts: Counter[str] = Counter()
    room_names: dict[int, str] = {}
    for room in inputs.rooms:
        rtype = inputs.room_types.get(room.index, "room")
        type_counts[rtype] += 1
        room_names[room.index] = f"{rtype.replace('_', ' ')} {type_counts[rtype]}"
    for room_index, members in by_room.items():
        rels = spatial_relations(members)
        symbols = {f.symbol: f for f in members}
        for f in members:
            dims = " x ".join(f"{v:.2f}" for v in f.size)
            text = f"{f.phrase()} ({dims} m)"
            if room_index in room_names:
                text += f" in the {room_names[room_index]}"
            if f.kind == KIND_FUNCTIONAL and f.parent is not None and f.parent in facts:
                text += f", part of the {facts[f.parent].phrase()}"
            mine = [(r, symbols[t]) for s, r, t in rels if s == f.symbol and r in ("on", "above")]
            mine += [("next to", symbols[t]) for s, r, t in rels if s == f.symbol and r == "next to"][:2]
            mine += [("next to", symbols[s]) for s, r, t in rels if t == f.symbol and r == "next to"][:1]
            if mine:
                text += ", " + ", ".join(f"{r} the {o.phrase()}" for r, o in mine[:3])
            out[f.uid] = text
    return out


def load_into_store(graph: SceneGraph, target: str) -> Any:
    """Load ``graph`` into the store at ``target`` (directory or Bolt URI); returns the open store."""
    from scenerag.store import open_store

    store = open_store(target)
    store.load(graph)
    return store


__all__ = ["GraphInputs", "assemble_graph", "load_into_store", "object_facts", "object_symbol"]
