"""Keyframe descriptions and room / floor / building summaries (KeySG III-D).

Contract: a :class:`KeyframeDescriber` writes a short text for one keyframe grounded in the objects the
keyframe sees: :class:`TemplateDescriber` (offline: classes, colours, sizes and relations computed from
the 3D boxes — ``on``, ``above``, ``next to``, ``left of``) or :class:`VlmDescriber` (an OpenAI-compatible
vision endpoint, given the image and the list of visible objects). A :class:`Summarizer` turns a room's
keyframe descriptions and objects into a room type and summary, a floor's room summaries into a floor
summary, and the floors into a building summary: :class:`LlmSummarizer` (any ``ChatModel``, JSON replies,
short prompts) or :class:`TemplateSummarizer` (offline and fast; the ``--no-llm`` option).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from scenerag.build.datasets import CameraIntrinsics
from scenerag.llm.base import ChatModel, LLMError, Message, Usage, parse_json_reply

# Basic colour names for objects whose segmenter gave no colour (sRGB centres).
_COLOR_NAMES: dict[str, tuple[int, int, int]] = {
    "white": (235, 235, 235),
    "light grey": (190, 190, 190),
    "grey": (128, 128, 128),
    "dark grey": (70, 70, 70),
    "black": (25, 25, 25),
    "red": (190, 40, 40),
    "orange": (225, 130, 45),
    "yellow": (225, 200, 60),
    "green": (60, 140, 60),
    "teal": (40, 140, 140),
    "blue": (50, 90, 175),
    "purple": (120, 70, 150),
    "pink": (225, 145, 170),
    "brown": (120, 80, 45),
    "beige": (215, 190, 150),
}


def color_name(rgb: Sequence[float]) -> str:
    """Nearest basic colour name of an sRGB triple after normalising brightness (shading-tolerant)."""
    c = np.asarray(rgb, dtype=np.float64)
    best, best_d = "grey", np.inf
    for name, ref in _COLOR_NAMES.items():
        r = np.asarray(ref, dtype=np.float64)
        # Compare chromaticity and (loosely) brightness: shading scales all channels together.
        cn, rn = c / max(c.sum(), 1.0), r / max(r.sum(), 1.0)
        d = np.linalg.norm(cn - rn) * 3.0 + abs(c.mean() / 255.0 - r.mean() / 255.0) * 0.5
        if d < best_d:
            best, best_d = name, d
    return best


@dataclass
class ObjectFacts:
    """What the describers know about an object: symbol (``O12``), label, colour and 3D box."""

    uid: int
    symbol: str
    label: str
    kind: str
    color: str
    bbox_min: np.ndarray
    bbox_max: np.ndarray
    parent: int | None = None

    @property
    def center(self) -> np.ndarray:
        return (self.bbox_min + self.bbox_max) / 2.0

    @property
    def size(self) -> np.ndarray:
        return self.bbox_max - self.bbox_min

    @property
    def name(self) -> str:
        return self.label.replace("_", " ")

    def phrase(self) -> str:
        return f"{self.color} {self.name}".strip() if self.color else self.name


@dataclass
class KeyframeView:
    """A keyframe to describe: pose (camera-to-world), room, floor and the visible object uids."""

    frame: int
    pose: np.ndarray
    intrinsics: CameraIntrinsics
    room: int
    floor: int
    visible: list[int] = field(default_factory=list)

    @property
    def heading(self) -> str:
        fwd = self.pose[:3, 2]
        ang = math.degrees(math.atan2(fwd[1], fwd[0])) % 360.0
        names = ["east", "north-east", "north", "north-west", "west", "south-west", "south", "south-east"]
        return names[int(((ang + 22.5) % 360) // 45)]


# -- relations ----------------------------------------------------------------------------------------------
def _footprint_overlap(a: ObjectFacts, b: ObjectFacts) -> float:
    """Area of the xy overlap of a and b over a's footprint area."""
    lo = np.maximum(a.bbox_min[:2], b.bbox_min[:2])
    hi = np.minimum(a.bbox_max[:2], b.bbox_max[:2])
    inter = float(np.prod(np.clip(hi - lo, 0.0, None)))
    area = float(np.prod(np.maximum(a.size[:2], 1e-3)))
    return inter / area


def _gap(a: ObjectFacts, b: ObjectFacts) -> float:
    """Horizontal gap between the boxes (0 when their footprints touch or overlap)."""
    d = np.maximum(0.0, np.maximum(a.bbox_min[:2] - b.bbox_max[:2], b.bbox_min[:2] - a.bbox_max[:2]))
    return float(np.linalg.norm(d))


def spatial_relations(
    objects: Sequence[ObjectFacts], pose: np.ndarray | None = None
) -> list[tuple[str, str, str]]:
    """``(subject symbol, relation, object symbol)`` among ``objects`` (functional elements excluded):
    ``on`` (resting on top), ``above`` (higher, overlapping footprint), ``next to`` (same level, < 0.3 m
    apart); with a camera ``pose`` a ``next to`` pair also gets ``left of`` from the viewer's side."""
    rels: list[tuple[str, str, str]] = []
    objs = [o for o in objects if o.kind != "functional"]
    for a in objs:
        support = None
        for b in objs:
            if a is b:
                continue
            if (
                abs(a.bbox_min[2] - b.bbox_max[2]) <= 0.06
                and _footprint_overlap(a, b) >= 0.5
                and a.size[2] < b.size[2] * 4
            ) and (support is None or b.bbox_max[2] > support.bbox_max[2]):
                support = b
        if support is not None:
            rels.append((a.symbol, "on", support.symbol))
            continue
        for b in objs:
            if a is not b and a.bbox_min[2] > b.bbox_max[2] + 0.1 and _footprint_overlap(a, b) >= 0.3:
                rels.append((a.symbol, "above", b.symbol))
                break
    on_pairs = {(s, o) for s, r, o in rels if r == "on"}
    for i, a in enumerate(objs):
        for b in objs[i + 1 :]:
            if (a.symbol, b.symbol) in on_pairs or (b.symbol, a.symbol) in on_pairs:
                continue
            if abs(a.bbox_min[2] - b.bbox_min[2]) < 0.1 and _gap(a, b) < 0.3:
                rels.append((a.symbol, "next to", b.symbol))
                if pose is not None:
                    ca = (a.center - pose[:3, 3]) @ pose[:3, 0]
                    cb = (b.center - pose[:3, 3]) @ pose[:3, 0]
                    left, right = (a, b) if ca < cb else (b, a)
                    rels.append((left.symbol, "left of", right.symbol))
    return rels


def _image_side(obj: ObjectFacts, view: KeyframeView) -> str:
    cam = (obj.center - view.pose[:3, 3]) @ view.pose[:3, :3]
    if cam[2] <= 1e-3:
        return "centre"
    u = cam[0] / cam[2] * view.intrinsics.fx + view.intrinsics.cx
    third = view.intrinsics.width / 3.0
    return "left" if u < third else ("right" if u > 2 * third else "centre")


def _article(phrase: str) -> str:
    return ("an " if phrase[:1] in "aeiou" else "a ") + phrase


def _count_phrase(n: int, phrase: str) -> str:
    if n == 1:
        return _article(phrase)
    words = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six"}
    return f"{words.get(n, str(n))} {phrase}s"


# -- keyframe describers ---------------------------------------------------------------------------------
@runtime_checkable
class KeyframeDescriber(Protocol):
    """Writes one keyframe's description from its view, the known objects and (optionally) its image."""

    name: str

    def describe(
        self, view: KeyframeView, objects: dict[int, ObjectFacts], image: np.ndarray | None
    ) -> str: ...


class TemplateDescriber:
    """Offline describer: heading, the visible objects (colour, class, size, image side) and computed
    relations; at most ``max_chars`` characters."""

    name = "template"
    needs_image = False

    def __init__(self, max_chars: int = 400, max_objects: int = 8) -> None:
        self.max_chars = max_chars
        self.max_objects = max_objects

    def describe(
        self, view: KeyframeView, objects: dict[int, ObjectFacts], image: np.ndarray | None = None
    ) -> str:
        seen = [objects[u] for u in view.visible if u in objects]
        things = [o for o in seen if o.kind != "functional"]
        parts = [o for o in seen if o.kind == "functional"]
        things.sort(key=lambda o: -float(np.prod(np.maximum(o.size, 0.05))))
        head = f"View on floor {view.floor} facing {view.heading}."
        if not things:
            return head + " No objects are in view."
        shown = things[: self.max_objects]
        items = []
        for o in shown:
            dims = "x".join(f"{v:.1f}" for v in o.size)
            items.append(f"{_article(o.phrase())} ({dims} m, {_image_side(o, view)})")
        text = head + " Visible: " + ", ".join(items) + "."
        by_symbol = {o.symbol: o for o in shown}
        sentences = []
        for s, rel, t in spatial_relations(shown, view.pose):
            if rel == "next to":
                continue
            a, b = by_symbol[s], by_symbol[t]
            sentence = f"The {a.phrase()} is {rel} the {b.phrase()}."
            if sentence not in sentences:
                sentences.append(sentence)
        if parts:
            counts = Counter(p.name for p in parts)
            sentences.append(
                "Parts: " + ", ".join(_count_phrase(n, name) for name, n in counts.items()) + "."
            )
        for sentence in sentences:
            if len(text) + 1 + len(sentence) > self.max_chars:
                break
            text += " " + sentence
        return text[: self.max_chars]


class VlmDescriber:
    """Describes a keyframe image with an OpenAI-compatible vision model, grounded in the visible objects
    (their symbols and labels are listed in the prompt)."""

    name = "vlm"
    needs_image = True

    def __init__(self, endpoint: Any, *, max_tokens: int = 160) -> None:
        self.endpoint = endpoint
        self.max_tokens = max_tokens

    def describe(self, view: KeyframeView, objects: dict[int, ObjectFacts], image: np.ndarray | None) -> str:
        if image is None:
            raise LLMError("bad_request", "the VLM describer needs the keyframe image")
        listed = "; ".join(
            f"{objects[u].symbol}: {objects[u].phrase()}" for u in view.visible if u in objects
        )
        prompt = (
            "Describe this indoor view in 2-3 sentences for a robot: what is visible, object states, and "
            "spatial relations. Refer to objects by their ids in brackets, e.g. [O12]. "
            f"Objects known to be visible: {listed or 'none'}."
        )
        text, _ = self.endpoint.ask(prompt, [image], max_tokens=self.max_tokens)
        return " ".join(text.split())


# -- summaries --------------------------------------------------------------------------------------------
@dataclass
class RoomContext:
    """What a room summary is made from."""

    room: int
    floor: int
    area: float
    elongation: float
    objects: list[ObjectFacts]
    descriptions: list[str]


@dataclass
class RoomSummary:
    room_type: str
    text: str


@runtime_checkable
class Summarizer(Protocol):
    """Room, floor and building summaries."""

    name: str
    usage: Usage

    def summarize_room(self, room: RoomContext) -> RoomSummary: ...

    def summarize_floor(
        self, floor: int, z_range: tuple[float, float], rooms: list[tuple[str, str]]
    ) -> str: ...

    def summarize_building(self, floors: list[str]) -> str: ...


# Object classes that point to a room type (weights add up; the best-scoring type wins).
_ROOM_CUES: dict[str, dict[str, float]] = {
    "bathroom": {"toilet": 3, "bathtub": 3, "shower": 3, "towel": 1, "mirror": 0.5, "sink": 1},
    "kitchen": {"oven": 3, "fridge": 2, "microwave": 2, "dishwasher": 2, "stove": 3},
    "bedroom": {"bed": 4, "wardrobe": 1.5, "nightstand": 1.5, "dresser": 1},
    "laundry_room": {"washing machine": 3, "dryer": 3},
    "office": {"desk": 2.5, "monitor": 2, "printer": 2, "laptop": 1},
    "living_room": {"sofa": 3, "tv": 2, "tv stand": 2, "coffee table": 2, "armchair": 1.5},
    "dining_room": {"table": 1, "chair": 0.5},
    "stairwell": {"stairs": 5},
    "corridor": {"shoe cabinet": 2, "bench": 1},
}


def infer_room_type(objects: Sequence[ObjectFacts], area: float, elongation: float) -> str:
    """A room type from the object classes it holds (and its shape: long and narrow means corridor)."""
    labels = Counter(o.name for o in objects if o.kind != "functional")
    scores = {t: sum(w * min(labels.get(c, 0), 3) for c, w in cues.items()) for t, cues in _ROOM_CUES.items()}
    if labels.get("chair", 0) >= 3 and labels.get("table", 0) >= 1:
        scores["dining_room"] += 2.0
    if elongation >= 3.0:
        scores["corridor"] += 4.0
    best = max(scores, key=scores.__getitem__)
    return best if scores[best] > 0 else "room"


def _object_inventory(objects: Sequence[ObjectFacts], limit: int = 12) -> str:
    counts = Counter(o.phrase() for o in objects if o.kind != "functional")
    items = [_count_phrase(n, p) for p, n in counts.most_common(limit)]
    more = len(counts) - len(items)
    return ", ".join(items) + (f" and {more} more kinds of objects" if more > 0 else "")


class TemplateSummarizer:
    """Offline summaries: room type from object classes, inventory with colours, notable relations."""

    name = "template"

    def __init__(self) -> None:
        self.usage = Usage()

    def summarize_room(self, room: RoomContext) -> RoomSummary:
        rtype = infer_room_type(room.objects, room.area, room.elongation)
        inventory = _object_inventory(room.objects)
        text = f"A {rtype.replace('_', ' ')} on floor {room.floor} of about {room.area:.0f} m²"
        text += f" with {inventory}." if inventory else ", empty."
        rels = [r for r in spatial_relations(room.objects) if r[1] in ("on", "above")]
        by_symbol = {o.symbol: o for o in room.objects}
        notes = list(
            dict.fromkeys(
                f"the {by_symbol[s].phrase()} is {r} the {by_symbol[t].phrase()}" for s, r, t in rels
            )
        )[:4]
        if notes:
            text += " " + "; ".join(notes).capitalize() + "."
        parts = Counter(o.name for o in room.objects if o.kind == "functional")
        if parts:
            text += " Interactive parts: " + ", ".join(_count_phrase(n, p) for p, n in parts.items()) + "."
        return RoomSummary(rtype, text)

    def summarize_floor(self, floor: int, z_range: tuple[float, float], rooms: list[tuple[str, str]]) -> str:
        counts = Counter(t.replace("_", " ") for t, _ in rooms)
        listing = ", ".join(_count_phrase(n, t) for t, n in counts.most_common())
        return f"Floor {floor} (z {z_range[0]:.1f} to {z_range[1]:.1f} m) with {len(rooms)} rooms: {listing}."

    def summarize_building(self, floors: list[str]) -> str:
        return f"A building with {len(floors)} floors. " + " ".join(floors)


_ROOM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"room_type": {"type": "string"}, "summary": {"type": "string"}},
    "required": ["room_type", "summary"],
}
_TEXT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"summary": {"type": "string"}},
    "required": ["summary"],
}


class LlmSummarizer:
    """Summaries written by a chat model with JSON replies; prompts are kept short (a few descriptions,
    an object inventory). ``usage`` accumulates the provider-reported tokens."""

    def __init__(
        self, model: ChatModel, *, max_tokens: int = 120, max_descriptions: int = 4, max_chars: int = 240
    ) -> None:
        self.model = model
        self.name = f"llm:{model.name}"
        self.max_tokens = max_tokens
        self.max_descriptions = max_descriptions
        self.max_chars = max_chars
        self.usage = Usage()

    def _ask(self, system: str, user: str, schema: dict[str, Any]) -> dict[str, Any]:
        response = self.model.chat(
            [Message.system(system), Message.user(user)], response_schema=schema, max_tokens=self.max_tokens
        )
        self.usage = self.usage + response.usage
        value, _ = parse_json_reply(response.message.content, schema, self.model.name)
        if not isinstance(value, dict):
            raise LLMError(
                "bad_response", f"{self.model.name} did not return a JSON object", model=self.model.name
            )
        return value

    def summarize_room(self, room: RoomContext) -> RoomSummary:
        descs = [d[: self.max_chars] for d in room.descriptions[: self.max_descriptions]]
        hint = infer_room_type(room.objects, room.area, room.elongation).replace("_", " ")
        user = (
            f"Room on floor {room.floor}, about {room.area:.0f} m². "
            f"Objects: {_object_inventory(room.objects, 15) or 'none'}. The objects suggest: {hint}.\n"
            "Views:\n" + "\n".join(f"- {d}" for d in descs)
        )
        value = self._ask(
            "You summarise rooms of a building for a robot, using only the objects and views given (never "
            "invent any). Reply with JSON: room_type (one or two words, e.g. kitchen, bedroom, corridor) and "
            "summary (2-3 sentences).",
            user,
            _ROOM_SCHEMA,
        )
        rtype = "_".join(str(value.get("room_type", "room")).lower().split()) or "room"
        return RoomSummary(rtype, " ".join(str(value.get("summary", "")).split()))

    def summarize_floor(self, floor: int, z_range: tuple[float, float], rooms: list[tuple[str, str]]) -> str:
        lines = "\n".join(f"- {t.replace('_', ' ')}: {s[: self.max_chars]}" for t, s in rooms)
        value = self._ask(
            "You summarise one floor of a building from its room summaries. Reply with JSON: summary "
            "(2-3 sentences).",
            f"Floor {floor} (z {z_range[0]:.1f} to {z_range[1]:.1f} m), rooms:\n{lines}",
            _TEXT_SCHEMA,
        )
        return " ".join(str(value["summary"]).split())

    def summarize_building(self, floors: list[str]) -> str:
        value = self._ask(
            "You summarise a building from its floor summaries. Reply with JSON: summary (2-3 sentences).",
            "\n".join(f"- {f[: self.max_chars]}" for f in floors),
            _TEXT_SCHEMA,
        )
        return " ".join(str(value["summary"]).split())


def room_elongation(polygon: np.ndarray) -> float:
    """Ratio of the longer to the shorter side of the polygon's minimum-area rotated rectangle."""
    pts = np.asarray(polygon, dtype=np.float64).reshape(-1, 2)
    if len(pts) < 3:
        return 1.0
    best = np.inf
    ratio = 1.0
    edges = np.diff(np.vstack([pts, pts[:1]]), axis=0)
    for e in edges:
        n = np.linalg.norm(e)
        if n < 1e-9:
            continue
        u = e / n
        v = np.array([-u[1], u[0]])
        a, b = pts @ u, pts @ v
        w, h = a.max() - a.min(), b.max() - b.min()
        if w * h < best:
            best, ratio = w * h, max(w, h) / max(min(w, h), 1e-6)
    return float(ratio)


__all__ = [
    "KeyframeDescriber",
    "KeyframeView",
    "LlmSummarizer",
    "ObjectFacts",
    "RoomContext",
    "RoomSummary",
    "Summarizer",
    "TemplateDescriber",
    "TemplateSummarizer",
    "VlmDescriber",
    "color_name",
    "infer_room_type",
    "room_elongation",
    "spatial_relations",
]
