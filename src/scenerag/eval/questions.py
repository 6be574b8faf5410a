"""Question sets: the YAML format of the seeds (uid, question, solution, comparator, tags), loading and
saving, answer checking, and generators that derive questions with ground-truth answers from any scene
graph (so synthetic graphs of any size come with a question set).
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from scenerag.errors import SceneRagError
from scenerag.graph import ontology as ont
from scenerag.graph.model import Node, SceneGraph

Comparator = Literal["SLDP", "PDDL"]


class QuestionSetError(SceneRagError):
    """A question file that cannot be read: names the file and the offending entry."""


class Question(BaseModel):
    """One evaluation item. ``solution`` is SLDP text (``comparator="SLDP"``) or a PDDL goal (``"PDDL"``)."""

    model_config = ConfigDict(extra="forbid")
    uid: str
    name: str = ""
    question: str
    solution: str
    comparator: Comparator = "SLDP"
    tags: list[str] = Field(default_factory=list)
    #: the reference query that produced the solution (provenance; never shown to an agent)
    cypher: str = ""

    @property
    def task(self) -> Literal["qa", "pddl"]:
        return "pddl" if self.comparator == "PDDL" else "qa"

    def answer_type(self) -> str | None:
        """SLDP type of the solution (set, list, dict, point, number, string): the seeds' answer-type hint."""
        if self.comparator != "SLDP":
            return None
        from scenerag.lang.sldp import parse_sldp, sldp_type

        return sldp_type(parse_sldp(self.solution))

    def is_correct(self, answer: str | None) -> bool:
        """Whether ``answer`` matches the solution (SLDP equality or PDDL goal equivalence)."""
        if answer is None or not answer.strip():
            return False
        if self.comparator == "PDDL":
            from scenerag.lang.pddl_goal import GoalParseError, goals_equivalent

            try:
                return goals_equivalent(answer, self.solution)
            except GoalParseError:
                return False
        from scenerag.lang.sldp import SldpParseError, sldp_equal

        truth = _truth_value(answer), _truth_value(self.solution)
        if None not in truth:
            return truth[0] == truth[1]
        try:
            return sldp_equal(answer, self.solution)
        except SldpParseError:
            return False


def _truth_value(text: str) -> bool | None:
    """A yes/no answer's truth value: the language's yes/no words (``agents/words``) or SLDP's rendering of a
    boolean (``true``/``false``) — "no" and "false" answer "Is there a bed?" alike. None for anything else."""
    from scenerag.agents.words import load_words

    word = text.strip().strip("'\"").lower()
    yes, no = (w.lower() for w in load_words().yes_no_answer)
    return {yes: True, "true": True, no: False, "false": False}.get(word)


class QuestionSet(BaseModel):
    """A YAML file of questions: ``{"questions": [...]}``; the seeds' ``correctness_comparator`` is accepted."""

    model_config = ConfigDict(extra="allow")
    questions: list[Question]


def _from_seed_format(item: dict) -> dict:
    """Accept the heracles_agents layout (``correctness_comparator: {comparison_type: ...}``)."""
    item = dict(item)
    comp = item.pop("correctness_comparator", None)
    if isinstance(comp, dict) and "comparator" not in item:
        item["comparator"] = str(comp.get("comparison_type", "SLDP")).upper()
    for key in ("uid", "solution"):  # YAML reads uid 12 and solution 28 as numbers
        if key in item and item[key] is not None:
            item[key] = str(item[key]).strip()
    return item


def load_questions(path: str | Path) -> list[Question]:
    """Read a question YAML file; errors name the file and the entry."""
    import yaml

    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise QuestionSetError(f"{path}: file not found") from None
    except yaml.YAMLError as exc:
        raise QuestionSetError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("questions"), list):
        raise QuestionSetError(f"{path}: expected a mapping with a 'questions' list")
    items = [_from_seed_format(q) if isinstance(q, dict) else q for q in data["questions"]]
    try:
        qs = QuestionSet.model_validate({"questions": items})
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise QuestionSetError(f"{path}: {loc}: {first['msg']}") from None
    uids = Counter(q.uid for q in qs.questions)
    dup = [u for u, c in uids.items() if c > 1]
    if dup:
        raise QuestionSetError(f"{path}: duplicate uid(s) {dup}")
    return qs.questions


def save_questions(path: str | Path, questions: Sequence[Question], *, header: str = "") -> None:
    """Write ``questions`` as YAML (block style, one mapping per question)."""
    import yaml

    body = yaml.safe_dump(
        {"questions": [q.model_dump() for q in questions]}, sort_keys=False, allow_unicode=True, width=120
    )
    text = "".join(f"# {line}\n" for line in header.splitlines()) + body
    Path(path).write_text(text)


# -- generators ----------------------------------------------------------------------------------------


def _fmt(x: float) -> str:
    return f"{x:.2f}"


def _point(node: Node) -> str:
    return "POINT(" + " ".join(_fmt(c) for c in node.position) + ")"


def _set(items: Iterable[str]) -> str:
    return "<" + ", ".join(sorted(items)) + ">"


class _GraphFacts:
    """Derived facts of a scene graph used by the generators (containment, places, classes)."""

    def __init__(self, graph: SceneGraph) -> None:
        self.g = graph
        self.objects = sorted(graph.nodes(ont.OBJECT), key=lambda n: n.symbol)
        self.rooms = sorted(graph.nodes(ont.ROOM), key=lambda n: n.symbol)
        counts = graph.label_counts()
        self.place_label = ont.MESH_PLACE if counts.get(ont.MESH_PLACE) else ont.PLACE
        self.place_edge = ont.sibling_edge_type(self.place_label)
        self.places = sorted(graph.nodes(self.place_label), key=lambda n: n.symbol)
        self.by_class: dict[str, list[Node]] = {}
        for o in self.objects:
            self.by_class.setdefault(o.class_name, []).append(o)
        self.room_objects: dict[str, set[str]] = {}
        self.object_rooms: dict[str, set[str]] = {}
        for room in self.rooms:
            found = set()
            for place in graph.children(room.symbol):
                found |= {o.symbol for o in graph.children(place.symbol) if o.label == ont.OBJECT}
            self.room_objects[room.symbol] = found
            for o in found:
                self.object_rooms.setdefault(o, set()).add(room.symbol)

    def hops(self, start: str, k: int) -> set[str]:
        seen, frontier = {start}, {start}
        for _ in range(k):
            frontier = {n.symbol for f in frontier for n in self.g.neighbors(f, self.place_edge)} - seen
            seen |= frontier
        return seen - {start}

    def nearest(self, node: Node, pool: Iterable[Node]) -> tuple[float, Node, float]:
        """(distance, nearest, margin to the second nearest) of ``pool`` to ``node`` (excluding itself)."""
        ranked = sorted(
            (math.dist(node.position, o.position), o.symbol, o) for o in pool if o.symbol != node.symbol
        )
        second = ranked[1][0] if len(ranked) > 1 else math.inf
        return ranked[0][0], ranked[0][2], second - ranked[0][0]


def generate_qa_questions(graph: SceneGraph, *, seed: int = 0, per_template: int = 2) -> list[Question]:
    """Question-answer items with ground truth computed from ``graph``: listing, aggregation, hierarchy,
    spatial, topology and position questions (the seeds' categories). Ambiguous draws (ties) are skipped."""
    f = _GraphFacts(graph)
    rng = random.Random(seed)
    out: list[Question] = []

    def add(uid: str, name: str, question: str, solution: str, tags: list[str]) -> None:
        out.append(Question(uid=uid, name=name, question=question, solution=solution, tags=tags))

    if not f.objects:
        return out
    add(
        "classes",
        "Distinct object classes",
        "What kinds of objects are in the scene graph?",
        _set(f.by_class),
        ["listing"],
    )
    add(
        "class-counts",
        "Objects per class",
        "How many objects of each class are there?",
        "{" + ", ".join(f"{c}: {len(v)}" for c, v in sorted(f.by_class.items())) + "}",
        ["aggregation"],
    )
    rooms_with_objects = [r for r in f.rooms if f.room_objects[r.symbol]]
    if rooms_with_objects:
        ranked = sorted(rooms_with_objects, key=lambda r: -len(f.room_objects[r.symbol]))
        if len(ranked) == 1 or len(f.room_objects[ranked[0].symbol]) > len(f.room_objects[ranked[1].symbol]):
            add(
                "room-most-objects",
                "Room with most objects",
                "Which room contains the most objects?",
                ranked[0].symbol,
                ["hierarchy", "aggregation"],
            )
    for i, room in enumerate(rng.sample(rooms_with_objects, min(per_template, len(rooms_with_objects)))):
        objs = f.room_objects[room.symbol]
        classes = Counter(f.g.node(o).class_name for o in objs)
        cls = rng.choice(sorted(classes))
        members = {o for o in objs if f.g.node(o).class_name == cls}
        add(
            f"class-in-room-{i}",
            "Objects of a class in a room",
            f"Which {cls} objects are in room {room.symbol}?",
            _set(members),
            ["hierarchy"],
        )
        add(
            f"count-in-room-{i}",
            "Objects in a room",
            f"How many objects are in room {room.symbol}?",
            str(len(objs)),
            ["hierarchy", "aggregation"],
        )
    small = [c for c, v in sorted(f.by_class.items()) if 1 < len(v) <= 5]
    for i, cls in enumerate(rng.sample(small, min(per_template, len(small)))):
        add(
            f"positions-{i}",
            "Positions of a class",
            f"Where are all the {cls} objects? Give their positions.",
            "<" + ", ".join(_point(o) for o in f.by_class[cls]) + ">",
            ["positions"],
        )
        zs = [o.position[2] for o in f.by_class[cls]]
        add(
            f"mean-height-{i}",
            "Mean height of a class",
            f"What is the average height (z) of the {cls} objects?",
            _fmt(sum(zs) / len(zs)),
            ["aggregation", "positions"],
        )
    for i, anchor in enumerate(rng.sample(f.objects, min(per_template * 3, len(f.objects)))):
        if sum(1 for q in out if q.uid.startswith("near-point")) >= per_template:
            break
        x, y, z = (round(c, 1) for c in anchor.position)
        radius = 5.0
        inside = {o.symbol for o in f.objects if math.dist(o.position, (x, y, z)) <= radius}
        margins = [abs(math.dist(o.position, (x, y, z)) - radius) for o in f.objects]
        if 1 <= len(inside) <= 12 and min(margins) > 0.05:
            add(
                f"near-point-{i}",
                "Objects near a point",
                f"Which objects are within {radius:g} meters of x: {x}, y: {y}, z: {z}?",
                _set(inside),
                ["spatial"],
            )
    for i, obj in enumerate(rng.sample(f.objects, min(per_template * 3, len(f.objects)))):
        if sum(1 for q in out if q.uid.startswith("closest")) >= per_template:
            break
        _, near, margin = f.nearest(obj, f.objects)
        if margin > 0.1:
            add(
                f"closest-{i}",
                "Closest object",
                f"Which object is closest to object {obj.symbol}?",
                near.symbol,
                ["spatial"],
            )
    for i, obj in enumerate(
        rng.sample(
            [o for o in f.objects if o.symbol in f.object_rooms], min(per_template, len(f.object_rooms))
        )
    ):
        add(
            f"room-of-{i}",
            "Room of an object",
            f"Which room is object {obj.symbol} in?",
            _set(f.object_rooms[obj.symbol]),
            ["hierarchy"],
        )
    if f.places:
        for i, place in enumerate(rng.sample(f.places, min(per_template, len(f.places)))):
            k = 3
            add(
                f"hops-{i}",
                "Places within k hops",
                f"How many {f.place_label} nodes are within {k} hops of {place.symbol} (not counting {place.symbol})?",
                str(len(f.hops(place.symbol, k))),
                ["topology"],
            )
    for i, room in enumerate(rng.sample(f.rooms, min(per_template, len(f.rooms)))):
        adj = {n.symbol for n in f.g.neighbors(room.symbol, ont.ROOM_CONNECTED)}
        if adj:
            add(
                f"adjacent-{i}",
                "Adjacent rooms",
                f"Which rooms are adjacent to room {room.symbol}?",
                _set(adj),
                ["topology"],
            )
    return out


def generate_pddl_questions(graph: SceneGraph, *, seed: int = 0, per_template: int = 2) -> list[Question]:
    """Instruction -> PDDL goal items over the Heracles domain, with goals derived from ``graph``."""
    f = _GraphFacts(graph)
    rng = random.Random(seed)
    out: list[Question] = []

    def add(uid: str, name: str, question: str, solution: str, tags: list[str]) -> None:
        out.append(
            Question(uid=uid, name=name, question=question, solution=solution, comparator="PDDL", tags=tags)
        )

    if not f.objects:
        return out
    for i, obj in enumerate(rng.sample(f.objects, min(per_template, len(f.objects)))):
        add(
            f"goto-{i}",
            "Go to an object",
            f"Go to object {obj.symbol}.",
            f"(visited-object {obj.symbol})",
            ["direct-symbol"],
        )
    multi = [c for c, v in sorted(f.by_class.items()) if 2 <= len(v) <= 5]
    for i, cls in enumerate(rng.sample(multi, min(per_template, len(multi)))):
        goal = "(or " + " ".join(f"(holding {o.symbol})" for o in f.by_class[cls]) + ")"
        add(f"grab-any-{i}", "Grab any of a class", f"Pick up any {cls}.", goal, ["direct-class"])
    singles = [v[0] for c, v in sorted(f.by_class.items()) if len(v) == 1]
    for i, ref in enumerate(rng.sample(singles, min(per_template, len(singles)))):
        pool = [o for o in f.objects if o.class_name != ref.class_name]
        _, near, margin = f.nearest(ref, pool)
        if margin > 0.5:
            add(
                f"inspect-near-{i}",
                "Inspect the object nearest a unique one",
                f"Get a good look at the object closest to the {ref.class_name}.",
                f"(safe {near.symbol})",
                ["spatial-reference"],
            )
    if len(f.places) >= 2:
        for i in range(per_template):
            a, b = rng.sample(f.places, 2)
            add(
                f"ordered-{i}",
                "Ordered places",
                f"First go to {a.symbol} and then to {b.symbol}.",
                f"(and (visited-place {a.symbol}) (at-place {b.symbol}))",
                ["ordering"],
            )
    if len(f.rooms) >= 2:
        for i in range(per_template):
            a, b = rng.sample(f.rooms, 2)
            add(
                f"avoid-{i}",
                "Visit a room, avoid another",
                f"Visit room {a.symbol} without entering room {b.symbol}.",
                f"(and (visited-room {a.symbol}) (not (visited-room {b.symbol})))",
                ["avoid"],
            )
    if f.places:
        for i, obj in enumerate(rng.sample(f.objects, min(per_template, len(f.objects)))):
            dest = rng.choice(f.places)
            add(
                f"move-{i}",
                "Move an object",
                f"Bring object {obj.symbol} to {dest.symbol}.",
                f"(object-in-place {obj.symbol} {dest.symbol})",
                ["manipulation"],
            )
    return out
