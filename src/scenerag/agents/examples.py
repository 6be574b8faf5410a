"""Worked examples for few-shot prompting: (question -> Cypher) and (instruction -> Cypher + goal sketch) pairs
generated from the *live* graph, plus user-supplied ones, and the retrieval of the k most similar.

Templates are written against roles, not names: the region label (``Room``), the leaf label (``Object``),
the place layer between them and each layer's ``*_CONNECTED`` type come from the schema; classes, symbols
and coordinates are the graph's own. So the library works on any scene graph whose schema has those roles,
and every generated query is one that runs on it (:meth:`ExampleLibrary.validate` checks).

User examples (YAML): ``examples: [{question: ..., cypher: ..., goal: ...}]``; ``goal`` marks an
instruction example (PDDL task).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scenerag.agents.query_repair import apply_edits
from scenerag.agents.words import fill_templates, load_words
from scenerag.errors import SceneRagError
from scenerag.graph import ontology as ont
from scenerag.store.base import GraphStore
from scenerag.store.schema import GraphSchema

if TYPE_CHECKING:
    from scenerag.agents.linking import Link
    from scenerag.retrieval.embeddings import Embedder

__all__ = ["CypherExample", "ExampleLibrary", "ExampleLoadError", "GraphRoles"]


class ExampleLoadError(SceneRagError):
    """A user example file that cannot be read (names the file and the entry)."""


@dataclass(frozen=True)
class CypherExample:
    """One worked example; ``goal`` is set for instruction (PDDL) examples, ``masked`` is the question with
    its entities replaced by their kinds (what retrieval compares)."""

    question: str
    cypher: str
    goal: str | None = None
    masked: str = ""
    source: str = "template"

    @property
    def task(self) -> str:
        return "pddl" if self.goal is not None else "qa"

    def render(self) -> str:
        if self.goal is None:
            return f"Q: {self.question}\nCypher: {self.cypher}"
        # goal first: the verb decides the predicate; a query follows only when the goal needs ?x
        cypher = f"\nCypher: {self.cypher}" if self.cypher else ""
        return f"Instruction: {self.question}\nGoal: {self.goal}{cypher}"


@dataclass
class GraphRoles:
    """Which labels and edge types play which part, read off a schema."""

    region: str | None = None
    leaf: str | None = None
    place: str | None = None
    region_link: str | None = None
    place_link: str | None = None
    leaf_in_place: bool = False  # (place)-[:CONTAINS]->(leaf) exists
    has_bbox: bool = False
    #: the robot's trajectory: a layer of poses chained by its own *_CONNECTED type (Hydra's agent layer)
    agent: str | None = None
    agent_link: str | None = None
    agent_in_place: bool = False
    #: the layer that holds regions (a KeySG building's floors)
    upper: str | None = None
    #: parts of leaves through their own edge type (KeySG's Object -[:HAS_ELEMENT]-> FunctionalElement)
    part: str | None = None
    part_link: str | None = None
    #: a listed property of leaves a person asks about (colour, material, state)
    leaf_attribute: str | None = None
    #: a numeric size of regions (``area_m2``)
    region_size: str | None = None

    @classmethod
    def from_schema(cls, schema: GraphSchema) -> GraphRoles:
        labels = set(schema.node_counts)
        chains = schema.containment_chains()
        roles = cls()
        roles.leaf = ont.OBJECT if ont.OBJECT in labels else (chains[0][-1] if chains else None)
        roles.region = ont.ROOM if ont.ROOM in labels else (chains[0][0] if chains else None)
        between = [
            c
            for ch in chains
            if roles.region in ch and roles.leaf in ch
            for c in ch[ch.index(roles.region) + 1 : ch.index(roles.leaf)]
        ]
        roles.place = between[0] if between else None
        for src, rtype, dst in schema.patterns:
            if rtype.endswith("_CONNECTED") and src == dst == roles.region:
                roles.region_link = rtype
            if rtype.endswith("_CONNECTED") and src == dst == roles.place:
                roles.place_link = rtype
            if rtype == ont.CONTAINS and src == roles.place and dst == roles.leaf:
                roles.leaf_in_place = True
        roles.has_bbox = ont.BBOX_DIM_KEY in schema.node_properties.get(roles.leaf or "", {})
        for src, rtype, dst in sorted(schema.patterns):
            if (
                rtype.endswith("_CONNECTED")
                and src == dst
                and src not in (roles.region, roles.place, roles.leaf)
                and any(ch[-1] == src for ch in chains)
            ):
                roles.agent, roles.agent_link = src, rtype
                roles.agent_in_place = (roles.place, ont.CONTAINS, src) in schema.patterns
                break
        above = [
            ch[ch.index(roles.region) - 1]
            for ch in chains
            if roles.region in ch and ch.index(roles.region) > 0
        ]
        roles.upper = above[0] if above and schema.node_counts.get(above[0], 0) > 1 else None
        for src, rtype, dst in sorted(schema.patterns):
            if (
                src == roles.leaf
                and dst != src
                and rtype != ont.CONTAINS
                and not rtype.endswith("_CONNECTED")
            ):
                roles.part, roles.part_link = dst, rtype
                break
        leaf_props = schema.node_properties.get(roles.leaf or "", {})
        roles.leaf_attribute = next(
            (k for k in _ATTRIBUTE_KEYS if k in leaf_props and leaf_props[k].values), None
        )
        region_props = schema.node_properties.get(roles.region or "", {})
        roles.region_size = next(
            (
                k
                for k, p in sorted(region_props.items())
                if "area" in k.lower() and p.type in ("FLOAT", "INTEGER")
            ),
            None,
        )
        return roles


#: listed leaf properties people ask about, in order of preference
_ATTRIBUTE_KEYS = ("color", "colour", "material", "state", "shape")


@dataclass
class _Values:
    """Graph values the templates are instantiated with (most frequent first)."""

    classes: list[str] = field(default_factory=list)
    region_classes: list[str] = field(default_factory=list)
    regions: list[str] = field(default_factory=list)
    leaves: list[tuple[str, str, tuple[float, float, float]]] = field(default_factory=list)
    places: list[str] = field(default_factory=list)
    singleton_class: str | None = None
    #: every class with exactly one node
    singleton_classes: list[str] = field(default_factory=list)


def _values(store: GraphStore, roles: GraphRoles) -> _Values:
    v = _Values()
    if roles.leaf:
        rows = store.query(
            f"MATCH (o:`{roles.leaf}`) RETURN o.class AS c, count(*) AS n ORDER BY n DESC, c", max_rows=200
        ).rows
        v.classes = [str(r["c"]) for r in rows if r.get("c")]
        single = [str(r["c"]) for r in rows if r.get("c") and r["n"] == 1]
        v.singleton_class = single[0] if single else None
        v.singleton_classes = single
        rows = store.query(
            f"MATCH (o:`{roles.leaf}`) RETURN o.nodeSymbol AS s, o.class AS c, o.center AS p "
            "ORDER BY o.nodeSymbol LIMIT 40"
        ).rows
        for r in rows:
            p = r.get("p") or {}
            xyz = (float(p.get("x", 0.0)), float(p.get("y", 0.0)), float(p.get("z", 0.0)))
            v.leaves.append((str(r["s"]), str(r.get("c") or ""), xyz))
    if roles.region:
        rows = store.query(
            f"MATCH (r:`{roles.region}`) RETURN r.nodeSymbol AS s, r.class AS c ORDER BY r.nodeSymbol LIMIT 50"
        ).rows
        v.regions = [str(r["s"]) for r in rows]
        v.region_classes = list(dict.fromkeys(str(r["c"]) for r in rows if r.get("c")))
    if roles.place:
        rows = store.query(f"MATCH (p:`{roles.place}`) RETURN p.nodeSymbol AS s ORDER BY s LIMIT 5").rows
        v.places = [str(r["s"]) for r in rows]
    return v


def _plural(word: str) -> str:
    """English plural of a class name; coarse categories (seating, storage, decor) read as "<c> objects"."""
    word = word.replace("_", " ")
    words = load_words()
    if word.endswith(words.mass_noun_endings) or word in words.mass_nouns:
        return f"{word} objects"
    if word.endswith("shelf"):
        return word[:-1] + "ves"
    if word.endswith(("s", "x", "sh", "ch")):
        return word + "es"
    if word.endswith("y") and not word.endswith(("ay", "ey", "oy", "uy")):
        return word[:-1] + "ies"
    return word + "s"


_RESERVED = frozenset(
    [
        "x",
        "o",
        "a",
        "b",
        "r",
        "p",
        "n",
        "match",
        "return",
        "where",
        "with",
        "order",
        "by",
        "limit",
        "in",
        "as",
        "and",
        "or",
        "not",
        "is",
        "null",
        "true",
        "false",
        "distinct",
        "case",
        "when",
        "then",
        "else",
        "end",
        "count",
        "exists",
        "all",
        "any",
        "none",
        "single",
    ]
)


def _var_name(cls: str) -> str:
    """A Cypher variable named after a class (``bag``, ``trash_can``), or ``ref`` where that cannot be."""
    name = re.sub(r"\W", "_", cls.lower())
    return name if re.fullmatch(r"[a-z_]\w*", name) and name not in _RESERVED else "ref"


def _pick(items: Sequence[Any], i: int, default: Any) -> Any:
    return items[i % len(items)] if items else default


def generate_examples(schema: GraphSchema, store: GraphStore) -> list[CypherExample]:
    """Template examples instantiated with ``store``'s graph (QA and instruction examples)."""
    roles = GraphRoles.from_schema(schema)
    if not roles.leaf:
        return []
    v = _values(store, roles)
    OB, R, P = roles.leaf, roles.region, roles.place
    c1, c2, c3 = _pick(v.classes, 0, "chair"), _pick(v.classes, 1, "table"), _pick(v.classes, 2, "lamp")
    cs = v.singleton_class or c3
    o1, _, p1 = _pick(v.leaves, 3, ("O1", c1, (0.0, 0.0, 0.0)))
    o2, _, _ = _pick(v.leaves, 11, ("O2", c2, (1.0, 0.0, 0.0)))
    x, y, z = (round(t + d, 1) for t, d in zip(p1, (0.6, -0.4, 0.2), strict=True))
    rv = _var_name(cs)  # the reference node named after its class: small models then filter the right node
    ex: list[tuple[str, str]] = [
        (f"How many {OB.lower()}s are there?", f"MATCH (o:{OB}) RETURN count(o)"),
        (f"How many {_plural(c1)} are there?", f"MATCH (o:{OB} {{class: '{c1}'}}) RETURN count(o)"),
        (f"List all the {_plural(c2)}.", f"MATCH (o:{OB} {{class: '{c2}'}}) RETURN o.nodeSymbol"),
        (f"Is there a {cs}? Which one?", f"MATCH (o:{OB} {{class: '{cs}'}}) RETURN o.nodeSymbol"),
        (f"What kinds of {OB.lower()}s are there?", f"MATCH (o:{OB}) RETURN DISTINCT o.class"),
        (
            f"What is the most common kind of {OB.lower()}?",
            f"MATCH (o:{OB}) WITH o.class AS c, count(o) AS n ORDER BY n DESC LIMIT 1 RETURN c",
        ),
        (
            f"Which kinds of {OB.lower()} appear only once?",
            f"MATCH (o:{OB}) WITH o.class AS c, count(o) AS n WHERE n = 1 RETURN c",
        ),
        (
            f"Are there more {_plural(c1)} or more {_plural(c2)}?",
            f"MATCH (o:{OB}) WHERE o.class IN ['{c1}', '{c2}'] WITH o.class AS c, count(o) AS n "
            "ORDER BY n DESC LIMIT 1 RETURN c",
        ),
        (f"How many {OB.lower()}s of each class are there?", f"MATCH (o:{OB}) RETURN o.class, count(o)"),
        (f"What is {o1}?", f"MATCH (o:{OB} {{nodeSymbol: '{o1}'}}) RETURN o.class"),
        (f"Where is {o2}?", f"MATCH (o:{OB} {{nodeSymbol: '{o2}'}}) RETURN o.center"),
        (f"Where are the {_plural(c3)}?", f"MATCH (o:{OB} {{class: '{c3}'}}) RETURN o.center"),
        (
            f"What is the average height of the {_plural(c1)}?",
            f"MATCH (o:{OB} {{class: '{c1}'}}) RETURN avg(o.center.z)",
        ),
        (
            f"How far is {o1} from {o2}?",
            f"MATCH (a:{OB} {{nodeSymbol: '{o1}'}}), (b:{OB} {{nodeSymbol: '{o2}'}}) "
            "RETURN point.distance(a.center, b.center)",
        ),
        (
            f"Which {OB.lower()} is closest to {o1}?",
            f"MATCH (x:{OB}), (ref:{OB} {{nodeSymbol: '{o1}'}}) WHERE x <> ref "
            "RETURN x.nodeSymbol ORDER BY point.distance(x.center, ref.center) LIMIT 1",
        ),
        (
            f"Which {c2} is nearest to the {cs}?",
            f"MATCH (x:{OB} {{class: '{c2}'}}), ({rv}:{OB} {{class: '{cs}'}}) "
            f"RETURN x.nodeSymbol ORDER BY point.distance(x.center, {rv}.center) LIMIT 1",
        ),
        (
            f"Which {c1} is farthest from the origin?",
            f"MATCH (o:{OB} {{class: '{c1}'}}) RETURN o.nodeSymbol "
            "ORDER BY point.distance(o.center, point({x: 0, y: 0, z: 0})) DESC LIMIT 1",
        ),
        (
            f"Which {OB.lower()}s are within 3 meters of {o2}?",
            f"MATCH (x:{OB}), (ref:{OB} {{nodeSymbol: '{o2}'}}) WHERE x <> ref AND "
            "point.distance(x.center, ref.center) < 3 RETURN x.nodeSymbol",
        ),
        (
            f"Which {OB.lower()}s are within 4 m of x: {x}, y: {y}, z: {z}?",
            f"MATCH (o:{OB}) WHERE point.distance(o.center, point({{x: {x}, y: {y}, z: {z}}})) < 4 "
            "RETURN o.nodeSymbol",
        ),
        (
            f"How many {_plural(c2)} are near the {cs}, within 5 meters?",
            f"MATCH (x:{OB} {{class: '{c2}'}}), ({rv}:{OB} {{class: '{cs}'}}) WHERE "
            f"point.distance(x.center, {rv}.center) < 5 RETURN count(DISTINCT x)",
        ),
    ]
    o3, _, _ = _pick(v.leaves, 17, ("O3", c3, (0.0, 1.0, 0.0)))
    heights = sorted(p[2] for _, _, p in v.leaves) or [1.0]
    high = round(heights[(3 * len(heights)) // 4], 1)  # a height some leaves are above
    ex += [
        (
            f"What is the closest thing to the {cs}?",
            f"MATCH (x:{OB}), ({rv}:{OB} {{class: '{cs}'}}) WHERE x <> {rv} "
            f"RETURN x.nodeSymbol ORDER BY point.distance(x.center, {rv}.center) LIMIT 1",
        ),
        (
            f"What is within 2 meters of the {cs}?",
            f"MATCH (x:{OB}), ({rv}:{OB} {{class: '{cs}'}}) WHERE x <> {rv} AND "
            f"point.distance(x.center, {rv}.center) < 2 RETURN x.nodeSymbol",
        ),
        (
            f"How far is the {cs} from the nearest {c2}?",
            f"MATCH (a:{OB} {{class: '{cs}'}}), (b:{OB} {{class: '{c2}'}}) "
            "RETURN min(point.distance(a.center, b.center))",
        ),
        (
            f"Is {o1} closer to {o2} or to {o3}?",
            f"MATCH (a:{OB} {{nodeSymbol: '{o1}'}}), (b:{OB}) WHERE b.nodeSymbol IN ['{o2}', '{o3}'] "
            "RETURN b.nodeSymbol ORDER BY point.distance(a.center, b.center) LIMIT 1",
        ),
        (
            f"Which {c1} is the highest up?",
            f"MATCH (o:{OB} {{class: '{c1}'}}) RETURN o.nodeSymbol ORDER BY o.center.z DESC LIMIT 1",
        ),
        (
            f"Which {OB.lower()} is the lowest?",
            f"MATCH (o:{OB}) RETURN o.nodeSymbol ORDER BY o.center.z ASC LIMIT 1",
        ),
        (
            f"Which {OB.lower()}s are more than {high} m above the floor?",
            f"MATCH (o:{OB}) WHERE o.center.z > {high} RETURN o.nodeSymbol",
        ),
    ]
    if roles.has_bbox:
        ex.append(
            (
                f"Which {OB.lower()} has the largest bounding box height?",
                f"MATCH (o:{OB}) RETURN o.nodeSymbol ORDER BY o.bbox_dim[2] DESC LIMIT 1",
            )
        )
    if roles.has_bbox:
        ex.append((f"How big is {o1}?", f"MATCH (o:{OB} {{nodeSymbol: '{o1}'}}) RETURN o.bbox_dim"))
        ex.append((f"How tall is the {cs}?", f"MATCH (o:{OB} {{class: '{cs}'}}) RETURN o.bbox_dim[2]"))
        ex.append(
            (
                f"Which is the tallest {c1}?",
                f"MATCH (o:{OB} {{class: '{c1}'}}) RETURN o.nodeSymbol ORDER BY o.bbox_dim[2] DESC LIMIT 1",
            )
        )
        if len(v.singleton_classes) > 1:  # two things named by their classes, one node each
            s1, s2 = v.singleton_classes[:2]
            ex.append(
                (
                    f"Which one is taller, the {s1} or the {s2}?",
                    f"MATCH (o:{OB}) WHERE o.class IN ['{s1}', '{s2}'] RETURN o.nodeSymbol "
                    "ORDER BY o.bbox_dim[2] DESC LIMIT 1",
                )
            )
        ex.append(  # volume: the product of the box's sides
            (
                f"Which has the bigger bounding-box volume, {o1} or {o2}?",
                f"MATCH (o:{OB}) WHERE o.nodeSymbol IN ['{o1}', '{o2}'] RETURN o.nodeSymbol "
                "ORDER BY o.bbox_dim[0] * o.bbox_dim[1] * o.bbox_dim[2] DESC LIMIT 1",
            )
        )
    if R:
        r1, r2 = _pick(v.regions, 0, "R1"), _pick(v.regions, 1, "R2")
        rc1 = _pick(v.region_classes, 0, None)
        rc2 = _pick(v.region_classes, 1, None)
        rl = R.lower()
        contains = f"(r:{R})-[:CONTAINS*]->(o:{OB})"
        ex += [
            (f"How many {rl}s are there?", f"MATCH (r:{R}) RETURN count(r)"),
            (
                f"How many {OB.lower()}s are in {rl} {r1}?",
                f"MATCH (r:{R} {{nodeSymbol: '{r1}'}})-[:CONTAINS*]->(o:{OB}) RETURN count(DISTINCT o)",
            ),
            (
                f"Which {_plural(c1)} are in {r2}?",
                f"MATCH (r:{R} {{nodeSymbol: '{r2}'}})-[:CONTAINS*]->(o:{OB} {{class: '{c1}'}}) "
                "RETURN DISTINCT o.nodeSymbol",
            ),
            (
                f"Which {rl} is {o2} in?",
                f"MATCH (r:{R})-[:CONTAINS*]->(o:{OB} {{nodeSymbol: '{o2}'}}) RETURN DISTINCT r.nodeSymbol",
            ),
            (
                f"In which {rl} is the {cs}?",
                f"MATCH (r:{R})-[:CONTAINS*]->(o:{OB} {{class: '{cs}'}}) RETURN DISTINCT r.nodeSymbol",
            ),
            (
                f"Which {rl} has the most {OB.lower()}s?",
                f"MATCH {contains} WITH r, count(DISTINCT o) AS n ORDER BY n DESC LIMIT 1 RETURN r.nodeSymbol",
            ),
            (
                f"Which two {rl}s have the fewest {OB.lower()}s?",
                f"MATCH (r:{R}) OPTIONAL MATCH (r)-[:CONTAINS*]->(o:{OB}) WITH r, count(DISTINCT o) AS n "
                "ORDER BY n ASC LIMIT 2 RETURN r.nodeSymbol",
            ),
            (
                f"Which {rl} has the most {_plural(c2)}?",
                f"MATCH (r:{R})-[:CONTAINS*]->(o:{OB} {{class: '{c2}'}}) WITH r, count(DISTINCT o) AS n "
                "ORDER BY n DESC LIMIT 1 RETURN r.nodeSymbol",
            ),
            (
                f"How many {OB.lower()}s does each {rl} have?",
                f"MATCH (r:{R}) OPTIONAL MATCH (r)-[:CONTAINS*]->(o:{OB}) RETURN r.nodeSymbol, count(DISTINCT o)",
            ),
            (
                f"Which {rl}s have no {c3}?",
                f"MATCH (r:{R}) WHERE NOT EXISTS {{ MATCH (r)-[:CONTAINS*]->(:{OB} {{class: '{c3}'}}) }} "
                "RETURN r.nodeSymbol",
            ),
            (
                f"Which {rl}s contain both a {c1} and a {c2}?",
                f"MATCH (r:{R}) WHERE EXISTS {{ MATCH (r)-[:CONTAINS*]->(:{OB} {{class: '{c1}'}}) }} AND "
                f"EXISTS {{ MATCH (r)-[:CONTAINS*]->(:{OB} {{class: '{c2}'}}) }} RETURN r.nodeSymbol",
            ),
            (
                f"Which {rl}s have more {OB.lower()}s than average?",
                f"MATCH (r:{R}) OPTIONAL MATCH (r)-[:CONTAINS*]->(o:{OB}) WITH r, count(DISTINCT o) AS n "
                "WITH collect({s: r.nodeSymbol, n: n}) AS rows, avg(n) AS mean UNWIND rows AS row "
                "WITH row, mean WHERE row.n > mean RETURN row.s",
            ),
            (
                f"Which {OB.lower()}s are in the same {rl} as {o1}?",
                f"MATCH (r:{R})-[:CONTAINS*]->(a:{OB} {{nodeSymbol: '{o1}'}}), (r)-[:CONTAINS*]->(b:{OB}) "
                "WHERE b <> a RETURN DISTINCT b.nodeSymbol",
            ),
            (f"What is the center of {rl} {r2}?", f"MATCH (r:{R} {{nodeSymbol: '{r2}'}}) RETURN r.center"),
            (
                f"Which has more {_plural(c1)}, {r1} or {r2}?",
                f"MATCH (r:{R}) WHERE r.nodeSymbol IN ['{r1}', '{r2}'] OPTIONAL MATCH (r)-[:CONTAINS*]->"
                f"(o:{OB} {{class: '{c1}'}}) WITH r, count(DISTINCT o) AS n ORDER BY n DESC LIMIT 1 "
                "RETURN r.nodeSymbol",
            ),
            (
                f"How many more {_plural(c2)} does {r1} have than {r2}?",
                _two_counts(R, r1, r2, OB, c2, "-"),
            ),
            (
                f"Are there more {_plural(c1)} in {r1} than in {r2}?",
                _two_counts(R, r1, r2, OB, c1, ">"),
            ),
            (
                f"How far apart are the two {_plural(c1)} in {r2}?",
                f"MATCH (r:{R} {{nodeSymbol: '{r2}'}})-[:CONTAINS*]->(a:{OB} {{class: '{c1}'}}), "
                f"(r)-[:CONTAINS*]->(b:{OB} {{class: '{c1}'}}) WHERE a.nodeSymbol < b.nodeSymbol "
                "RETURN point.distance(a.center, b.center)",
            ),
            (
                f"How many {_plural(c3)} does each {rl} have, 0 if none?",
                f"MATCH (r:{R}) OPTIONAL MATCH (r)-[:CONTAINS*]->(o:{OB} {{class: '{c3}'}}) "
                "RETURN r.nodeSymbol, count(DISTINCT o)",
            ),
        ]
        if rc1:
            ex += [
                (
                    f"What is in the {rc1}?",
                    f"MATCH (r:{R} {{class: '{rc1}'}})-[:CONTAINS*]->(o:{OB}) RETURN DISTINCT o.nodeSymbol",
                ),
                (
                    f"Which {_plural(c2)} are in the {rc1}?",
                    f"MATCH (r:{R} {{class: '{rc1}'}})-[:CONTAINS*]->(o:{OB} {{class: '{c2}'}}) "
                    "RETURN DISTINCT o.nodeSymbol",
                ),
                (
                    f"How many {_plural(c1)} are in the {_plural(rc2 or rc1)}?",
                    f"MATCH (r:{R} {{class: '{rc2 or rc1}'}})-[:CONTAINS*]->(o:{OB} {{class: '{c1}'}}) "
                    "RETURN count(DISTINCT o)",
                ),
                (
                    f"Which has more {_plural(c2)}, the {rc1} or the {rc2 or rc1}?",
                    f"MATCH (r:{R}) WHERE r.class IN ['{rc1}', '{rc2 or rc1}'] OPTIONAL MATCH (r)-[:CONTAINS*]->"
                    f"(o:{OB} {{class: '{c2}'}}) WITH r, count(DISTINCT o) AS n ORDER BY n DESC LIMIT 1 "
                    "RETURN r.nodeSymbol",
                ),
                (
                    f"Which has more {_plural(c3)}, the {rc1} or {rl} {r2}?",
                    f"MATCH (r:{R}) WHERE r.class = '{rc1}' OR r.nodeSymbol = '{r2}' OPTIONAL MATCH (r)-[:CONTAINS*]->"
                    f"(o:{OB} {{class: '{c3}'}}) WITH r, count(DISTINCT o) AS n ORDER BY n DESC LIMIT 1 "
                    "RETURN r.nodeSymbol",
                ),
                (
                    f"Which {OB.lower()}s are within 2 m of the {c1} in the {rc1}?",
                    f"MATCH (r:{R} {{class: '{rc1}'}})-[:CONTAINS*]->({_var_name(c1)}:{OB} {{class: '{c1}'}}), "
                    f"(x:{OB}) WHERE x <> {_var_name(c1)} AND point.distance(x.center, {_var_name(c1)}.center) < 2 "
                    "RETURN DISTINCT x.nodeSymbol",
                ),
                (
                    f"Is there a {c3} in the {rc1}?",
                    f"OPTIONAL MATCH (r:{R} {{class: '{rc1}'}})-[:CONTAINS*]->(o:{OB} {{class: '{c3}'}}) "
                    "RETURN count(o) > 0",
                ),
                (
                    f"What kinds of things are in the {rc1}?",
                    f"MATCH (r:{R} {{class: '{rc1}'}})-[:CONTAINS*]->(o:{OB}) RETURN DISTINCT o.class",
                ),
                (
                    f"Which {rl}s are {_plural(rc2 or rc1)}?",
                    f"MATCH (r:{R} {{class: '{rc2 or rc1}'}}) RETURN r.nodeSymbol",
                ),
            ]
        if roles.region_link:
            link = roles.region_link
            pair = store.query(  # two regions with a common neighbour
                f"MATCH (a:{R})-[:{link}]-(c:{R})-[:{link}]-(b:{R}) WHERE a.nodeSymbol < b.nodeSymbol "
                "RETURN a.nodeSymbol AS a, b.nodeSymbol AS b ORDER BY a, b LIMIT 1"
            ).rows
            ra, rb = (str(pair[0]["a"]), str(pair[0]["b"])) if pair else (r1, r2)
            ex += [
                (
                    f"Which {rl}s are adjacent to {r2}?",
                    f"MATCH (a:{R} {{nodeSymbol: '{r2}'}})-[:{link}]-(b:{R}) RETURN DISTINCT b.nodeSymbol",
                ),
                (
                    f"Which {rl} has the fewest neighboring {rl}s?",
                    f"MATCH (a:{R}) OPTIONAL MATCH (a)-[:{link}]-(b:{R}) WITH a, count(DISTINCT b) AS n "
                    "ORDER BY n ASC LIMIT 1 RETURN a.nodeSymbol",
                ),
                (
                    f"Which {rl} is connected to the most other {rl}s?",
                    f"MATCH (a:{R})-[:{link}]-(b:{R}) WITH a, count(DISTINCT b) AS n "
                    "ORDER BY n DESC LIMIT 1 RETURN a.nodeSymbol",
                ),
                (
                    f"How many {rl}-to-{rl} steps is the shortest way from {r1} to {r2}?",
                    f"MATCH (a:{R} {{nodeSymbol: '{r1}'}}), (b:{R} {{nodeSymbol: '{r2}'}}) "
                    f"MATCH p = shortestPath((a)-[:{link}*..10]-(b)) RETURN length(p)",
                ),
                (
                    f"Which pairs of {rl}s are directly connected?",
                    f"MATCH (a:{R})-[:{link}]-(b:{R}) WHERE a.nodeSymbol < b.nodeSymbol "
                    "RETURN a.nodeSymbol, b.nodeSymbol",
                ),
                (
                    f"Which {rl}s are next to both {ra} and {rb}?",
                    f"MATCH (a:{R} {{nodeSymbol: '{ra}'}})-[:{link}]-(c:{R})-[:{link}]-(b:{R} {{nodeSymbol: '{rb}'}}) "
                    "RETURN DISTINCT c.nodeSymbol",
                ),
                (
                    f"Which {rl}s can I get to from {r2} in at most two moves?",
                    f"MATCH (a:{R} {{nodeSymbol: '{r2}'}})-[:{link}*1..2]-(b:{R}) WHERE b <> a "
                    "RETURN DISTINCT b.nodeSymbol",
                ),
                (
                    f"Which {rl}s do I pass through on the shortest way from {r1} to {r2}, in order?",
                    f"MATCH (a:{R} {{nodeSymbol: '{r1}'}}), (b:{R} {{nodeSymbol: '{r2}'}}) "
                    f"MATCH p = shortestPath((a)-[:{link}*..10]-(b)) RETURN [n IN nodes(p) | n.nodeSymbol]",
                ),
                (
                    f"Is {r1} connected to {r2}?",
                    f"MATCH (a:{R} {{nodeSymbol: '{r1}'}}), (b:{R} {{nodeSymbol: '{r2}'}}) "
                    f"RETURN EXISTS {{ MATCH (a)-[:{link}]-(b) }}",
                ),
            ]
    if R and P:
        pr = f"(r:{R})-[:CONTAINS*]->(p:{P})"
        rcx = _pick(v.region_classes, 0, None)
        ex += [
            (
                f"How many {P} nodes does {_pick(v.regions, 1, 'R2')} have?",
                f"MATCH (r:{R} {{nodeSymbol: '{_pick(v.regions, 1, 'R2')}'}})-[:CONTAINS*]->(p:{P}) "
                "RETURN count(DISTINCT p)",
            ),
            (
                f"Which {R.lower()}s have the fewest {P} nodes?",
                f"MATCH {pr} WITH r, count(DISTINCT p) AS n WITH collect({{s: r.nodeSymbol, n: n}}) AS rows, "
                "min(n) AS m UNWIND rows AS row WITH row, m WHERE row.n = m RETURN row.s",
            ),
            (
                f"Which {OB.lower()}s are not in any {R.lower()}?",
                f"MATCH (o:{OB}) WHERE NOT EXISTS {{ MATCH (:{R})-[:CONTAINS*]->(o) }} RETURN o.nodeSymbol",
            ),
            (
                f"How many {P} nodes belong to no {R.lower()}?",
                f"MATCH (p:{P}) WHERE NOT EXISTS {{ MATCH (:{R})-[:CONTAINS*]->(p) }} RETURN count(p)",
            ),
        ]
        if roles.leaf_in_place:  # counts with an existence condition
            r2 = _pick(v.regions, 1, "R2")
            ex += [
                (
                    f"On how many {P} nodes of {r2} is there at least one {OB.lower()}?",
                    f"MATCH (r:{R} {{nodeSymbol: '{r2}'}})-[:CONTAINS*]->(p:{P}) "
                    f"WHERE EXISTS {{ MATCH (p)-[:CONTAINS]->(:{OB}) }} RETURN count(DISTINCT p)",
                ),
                (
                    f"How many {P} nodes of {r2} hold no {OB.lower()}s at all?",
                    f"MATCH (r:{R} {{nodeSymbol: '{r2}'}})-[:CONTAINS*]->(p:{P}) "
                    f"WHERE NOT EXISTS {{ MATCH (p)-[:CONTAINS]->(:{OB}) }} RETURN count(DISTINCT p)",
                ),
            ]
        if rcx and len(v.region_classes) > 1:  # kinds in one class of region and in none of another
            other = v.region_classes[1]
            ex.append(
                (
                    f"What kinds of {OB.lower()}s are in the {rcx} but in none of the {_plural(other)}?",
                    f"MATCH (:{R} {{class: '{other}'}})-[:CONTAINS*]->(x:{OB}) WITH collect(DISTINCT x.class) AS "
                    f"elsewhere MATCH (:{R} {{class: '{rcx}'}})-[:CONTAINS*]->(o:{OB}) WHERE NOT o.class IN "
                    "elsewhere RETURN DISTINCT o.class",
                )
            )
        if rcx:
            ex.append(
                (
                    f"How many {P} nodes make up the {rcx}?",
                    f"MATCH (r:{R} {{class: '{rcx}'}})-[:CONTAINS*]->(p:{P}) RETURN count(DISTINCT p)",
                )
            )
    if P and roles.place_link:
        pl, p0 = roles.place_link, _pick(v.places, 0, "P1")
        p1 = _pick(v.places, -1, "P2")
        ex.append(
            (
                f"How many hops is the shortest route from {P} {p0} to {P} {p1}?",
                f"MATCH (a:{P} {{nodeSymbol: '{p0}'}}), (b:{P} {{nodeSymbol: '{p1}'}}) "
                f"MATCH s = shortestPath((a)-[:{pl}*..200]-(b)) RETURN length(s)",
            )
        )
        ex.append(
            (  # reachability: a breadth-first shortest path per node, none found = unreachable
                f"Which {P} nodes can the robot not reach from {p0} along the {P} links?",
                f"MATCH (a:{P} {{nodeSymbol: '{p0}'}}), (b:{P}) WHERE b <> a "
                f"OPTIONAL MATCH s = shortestPath((a)-[:{pl}*..200]-(b)) WITH b, s WHERE s IS NULL "
                "RETURN b.nodeSymbol",
            )
        )
        ex.append(
            (  # components: each node's smallest reachable symbol stands for its piece of the graph
                f"Into how many connected components do the {P} nodes and their links split?",
                f"MATCH (a:{P}), (b:{P}) WHERE a = b OR shortestPath((a)-[:{pl}*..200]-(b)) IS NOT NULL "
                "WITH a, min(b.nodeSymbol) AS root RETURN count(DISTINCT root)",
            )
        )
        ex.append(
            (
                f"Which {P} has the most neighbouring {P} nodes?",
                f"MATCH (a:{P})-[:{pl}]-(b:{P}) WITH a, count(DISTINCT b) AS n ORDER BY n DESC LIMIT 1 "
                "RETURN a.nodeSymbol",
            )
        )
        ex.append(
            (
                f"Which {P} nodes have no neighbours?",
                f"MATCH (a:{P}) WHERE NOT EXISTS {{ MATCH (a)-[:{pl}]-(:{P}) }} RETURN a.nodeSymbol",
            )
        )
        ex.append(
            (
                f"How many {P} nodes are within 3 hops of {p0}, not counting {p0}?",
                f"MATCH (a:{P} {{nodeSymbol: '{p0}'}})-[:{pl}*1..3]-(b:{P}) WHERE b <> a RETURN count(DISTINCT b)",
            )
        )
        if roles.leaf_in_place:
            ex.append(
                (
                    f"How many {OB.lower()}s are in {P} nodes within 4 hops of the {cs}'s {P}, other than the {cs}?",
                    f"MATCH (a:{OB} {{class: '{cs}'}})<-[:CONTAINS]-(p:{P})-[:{pl}*0..4]-(q:{P})-[:CONTAINS]->"
                    f"(o:{OB}) WHERE o <> a RETURN count(DISTINCT o)",
                )
            )
            ex.append(
                (  # the place of an object, then that place's own links
                    f"How many {P} nodes are directly connected to the {P} the {cs} is on?",
                    f"MATCH (a:{OB} {{class: '{cs}'}})<-[:CONTAINS]-(p:{P})-[:{pl}]-(q:{P}) WHERE q <> p "
                    "RETURN count(DISTINCT q)",
                )
            )
            ex.append(
                (
                    f"Which other {OB.lower()}s share a {P} with the {cs}?",
                    f"MATCH (a:{OB} {{class: '{cs}'}})<-[:CONTAINS]-(p:{P})-[:CONTAINS]->(b:{OB}) WHERE b <> a "
                    "RETURN DISTINCT b.nodeSymbol",
                )
            )
            ex.append(
                (
                    f"How many {pl} hops separate the {P} of the {cs} from the {P} of {o2}?",
                    f"MATCH (a:{OB} {{class: '{cs}'}})<-[:CONTAINS]-(p:{P}), (b:{OB} {{nodeSymbol: '{o2}'}})"
                    f"<-[:CONTAINS]-(q:{P}) MATCH s = shortestPath((p)-[:{pl}*..50]-(q)) RETURN length(s)",
                )
            )
            ex.append(
                (
                    f"Which {P} is the {cs} on?",
                    f"MATCH (p:{P})-[:CONTAINS]->(o:{OB} {{class: '{cs}'}}) RETURN p.nodeSymbol",
                )
            )
            ex.append(
                (
                    f"Which {P} is {o2} in?",
                    f"MATCH (p:{P})-[:CONTAINS]->(o:{OB} {{nodeSymbol: '{o2}'}}) RETURN p.nodeSymbol",
                )
            )
    ex += _composed_examples(store, roles, v, cs=cs, c1=c1, c2=c2, o1=o1, o2=o2, o3=o3)
    if roles.agent and roles.agent_link:
        ex += _trajectory_examples(store, roles, OB, P)
    if R and roles.region_size:
        size, r1, rc = roles.region_size, _pick(v.regions, 0, "R1"), _pick(v.region_classes, 0, None)
        rl = R.lower()
        ex += [
            (
                f"Which {rl} is the largest?",
                f"MATCH (r:{R}) RETURN r.nodeSymbol ORDER BY r.{size} DESC LIMIT 1",
            ),
            (f"How big is {rl} {r1}?", f"MATCH (r:{R} {{nodeSymbol: '{r1}'}}) RETURN r.{size}"),
        ]
        if rc:
            ex.append(
                (
                    f"Which {rc.replace('_', ' ')} is the smallest?",
                    f"MATCH (r:{R} {{class: '{rc}'}}) RETURN r.nodeSymbol ORDER BY r.{size} ASC LIMIT 1",
                )
            )
    if R and roles.upper:
        ex += _upper_layer_examples(store, roles, v, c1=c1, c2=c2, c3=c3, o2=o2)
    ref = _reference_property(store, schema, OB)
    if ref:
        ex += _reference_examples(store, OB, ref)
    if roles.part and roles.part_link:
        ex += _part_examples(store, roles, v)
    if roles.leaf_attribute:
        ex += _attribute_examples(store, roles, cs=cs, o1=o1, c1=c1)
    # a class that only repeats its label (every Object is class 'object') names nothing a user would say
    plain = {ont.layer_name(label) for label in schema.node_counts}
    hollow = [f"'{c}'" for c in [*v.classes, *v.region_classes] if c.lower() in plain]
    ex = [(q, c) for q, c in ex if not any(h in c for h in hollow)]
    out = [CypherExample(_layer_words(q, schema), c) for q, c in ex]
    out += _instruction_examples(roles, v, o1=o1, o2=o2, c1=c1, c2=c2, c3=c3, cs=cs)
    return out


def _layer_words(question: str, schema: GraphSchema) -> str:
    """A template question with labels said as words ("MeshPlace nodes" -> "mesh places", "the MeshPlace"
    -> "the mesh place"), as a user writes them; the Cypher keeps the labels."""
    for label in sorted(schema.node_counts, key=len, reverse=True):
        word = ont.layer_name(label).replace("_", " ")
        if word == label:
            continue
        question = re.sub(rf"\b{label} nodes\b", _plural(word), question)
        question = re.sub(rf"\b{label}\b", word, question)
    return question


def _composed_examples(store: GraphStore, roles: GraphRoles, v: _Values, **n: str) -> list[tuple[str, str]]:
    """Two-step questions: a node found by one condition (the room with the most X, the room holding Y,
    the rooms next to Z, the place under W, the nearest V) and then asked about. Small models write each
    step alone but rarely chain them unshown."""
    OB, R, P = roles.leaf, roles.region, roles.place
    cs, c1, c2, o1, o2, o3 = n["cs"], n["c1"], n["c2"], n["o1"], n["o2"], n["o3"]
    ex: list[tuple[str, str]] = [
        (
            f"Which is farther from {o1}: the {cs} or {o3}?",
            f"MATCH (a:{OB} {{nodeSymbol: '{o1}'}}), (b:{OB}) WHERE b.class = '{cs}' OR b.nodeSymbol = '{o3}' "
            "RETURN b.nodeSymbol ORDER BY point.distance(a.center, b.center) DESC LIMIT 1",
        ),
        (
            f"Is {o1} closer to the {cs} or to {o3}?",
            f"MATCH (a:{OB} {{nodeSymbol: '{o1}'}}), (b:{OB}) WHERE b.class = '{cs}' OR b.nodeSymbol = '{o3}' "
            "RETURN b.nodeSymbol ORDER BY point.distance(a.center, b.center) ASC LIMIT 1",
        ),
        (
            f"Which one is higher up, {o1} or {o3}?",
            f"MATCH (o:{OB}) WHERE o.nodeSymbol IN ['{o1}', '{o3}'] RETURN o.nodeSymbol ORDER BY o.center.z DESC LIMIT 1",
        ),
    ]
    if not R:
        return ex
    rl = R.lower()
    r1, r2, r3 = _pick(v.regions, 0, "R1"), _pick(v.regions, 1, "R2"), _pick(v.regions, 2, "R3")
    ex += [
        (
            f"How many {_plural(c2)} are in the {rl} with the most {_plural(c1)}?",
            f"MATCH (r:{R})-[:CONTAINS*]->(o:{OB} {{class: '{c1}'}}) WITH r, count(DISTINCT o) AS n "
            f"ORDER BY n DESC LIMIT 1 MATCH (r)-[:CONTAINS*]->(x:{OB} {{class: '{c2}'}}) RETURN count(DISTINCT x)",
        ),
        (  # several named regions at once (a first step's answer, "R2 and R5"): one count over all
            f"How many {_plural(c1)} are in {r1} and {r2}?",
            f"MATCH (r:{R})-[:CONTAINS*]->(o:{OB} {{class: '{c1}'}}) WHERE r.nodeSymbol IN ['{r1}', '{r2}'] "
            "RETURN count(DISTINCT o)",
        ),
        (
            f"What kinds of {OB.lower()}s are in {r1} and {r2}?",
            f"MATCH (r:{R})-[:CONTAINS*]->(o:{OB}) WHERE r.nodeSymbol IN ['{r1}', '{r2}'] RETURN DISTINCT o.class",
        ),
        (  # which of two regions is nearer a third: centers
            f"Which is closer to {r1}, {r2} or {r3}?",
            f"MATCH (a:{R} {{nodeSymbol: '{r1}'}}), (b:{R}) WHERE b.nodeSymbol IN ['{r2}', '{r3}'] "
            "RETURN b.nodeSymbol ORDER BY point.distance(a.center, b.center) LIMIT 1",
        ),
        (  # a kind in both: the second region's kinds among the first's
            f"What kinds of {OB.lower()}s are in both {r1} and {r2}?",
            f"MATCH (a:{R} {{nodeSymbol: '{r1}'}})-[:CONTAINS*]->(x:{OB}) WITH collect(DISTINCT x.class) AS kinds "
            f"MATCH (b:{R} {{nodeSymbol: '{r2}'}})-[:CONTAINS*]->(o:{OB}) WHERE o.class IN kinds "
            "RETURN DISTINCT o.class",
        ),
        (  # a kind in one and not the other: the kinds to leave out are collected first
            f"What kinds of {OB.lower()}s are in {r1} but not in {r2}?",
            f"MATCH (b:{R} {{nodeSymbol: '{r2}'}})-[:CONTAINS*]->(x:{OB}) WITH collect(DISTINCT x.class) AS kinds "
            f"MATCH (a:{R} {{nodeSymbol: '{r1}'}})-[:CONTAINS*]->(o:{OB}) WHERE NOT o.class IN kinds "
            "RETURN DISTINCT o.class",
        ),
        (  # the same region as a named node: the region stays bound from one pattern to the next
            f"Which other {OB.lower()}s are in the same {rl} as {o1}?",
            f"MATCH (r:{R})-[:CONTAINS*]->(x:{OB} {{nodeSymbol: '{o1}'}}) MATCH (r)-[:CONTAINS*]->(o:{OB}) "
            "WHERE o <> x RETURN DISTINCT o.nodeSymbol",
        ),
        (  # counted per node over the regions that hold it
            f"Which {OB.lower()}s are in more than one {rl}?",
            f"MATCH (r:{R})-[:CONTAINS*]->(o:{OB}) WITH o, count(DISTINCT r) AS n WHERE n > 1 RETURN o.nodeSymbol",
        ),
        (
            f"Which {rl} is the {c1} nearest to {o2} in?",
            f"MATCH (x:{OB} {{class: '{c1}'}}), (ref:{OB} {{nodeSymbol: '{o2}'}}) WHERE x <> ref "
            f"WITH x ORDER BY point.distance(x.center, ref.center) LIMIT 1 "
            f"MATCH (r:{R})-[:CONTAINS*]->(x) RETURN DISTINCT r.nodeSymbol",
        ),
        (
            f"Which {rl} holds the {c2} farthest from the {cs}?",
            f"MATCH (x:{OB} {{class: '{c2}'}}), (ref:{OB} {{class: '{cs}'}}) WHERE x <> ref "
            f"WITH x ORDER BY point.distance(x.center, ref.center) DESC LIMIT 1 "
            f"MATCH (r:{R})-[:CONTAINS*]->(x) RETURN DISTINCT r.nodeSymbol",
        ),
        (
            f"What kinds of {OB.lower()}s are in the {rl} that {o2} is in?",
            f"MATCH (r:{R})-[:CONTAINS*]->(:{OB} {{nodeSymbol: '{o2}'}}) WITH DISTINCT r "
            f"MATCH (r)-[:CONTAINS*]->(o:{OB}) RETURN DISTINCT o.class",
        ),
        (
            f"Which {rl}s have a {c1} but no {c2}?",
            f"MATCH (r:{R}) WHERE EXISTS {{ MATCH (r)-[:CONTAINS*]->(:{OB} {{class: '{c1}'}}) }} "
            f"AND NOT EXISTS {{ MATCH (r)-[:CONTAINS*]->(:{OB} {{class: '{c2}'}}) }} RETURN r.nodeSymbol",
        ),
        (
            f"How many {OB.lower()}s are in the {rl} where the {cs} is?",
            f"MATCH (r:{R})-[:CONTAINS*]->(:{OB} {{class: '{cs}'}}) WITH DISTINCT r "
            f"MATCH (r)-[:CONTAINS*]->(o:{OB}) RETURN count(DISTINCT o)",
        ),
    ]
    if P:
        ex += [
            (
                f"How many {_plural(c1)} are in the {rl} made of the most {P} nodes?",
                f"MATCH (r:{R})-[:CONTAINS*]->(p:{P}) WITH r, count(DISTINCT p) AS n ORDER BY n DESC LIMIT 1 "
                f"MATCH (r)-[:CONTAINS*]->(o:{OB} {{class: '{c1}'}}) RETURN count(DISTINCT o)",
            ),
            (
                f"How many {P} nodes does the {rl} with the {cs} have?",
                f"MATCH (r:{R})-[:CONTAINS*]->(:{OB} {{class: '{cs}'}}) WITH DISTINCT r "
                f"MATCH (r)-[:CONTAINS*]->(p:{P}) RETURN count(DISTINCT p)",
            ),
        ]
    if P and roles.leaf_in_place:
        ex += [
            (
                f"Which {P} in {r2} has the most {OB.lower()}s on it?",
                f"MATCH (r:{R} {{nodeSymbol: '{r2}'}})-[:CONTAINS*]->(p:{P})-[:CONTAINS]->(o:{OB}) "
                "WITH p, count(DISTINCT o) AS n ORDER BY n DESC LIMIT 1 RETURN p.nodeSymbol",
            ),
            (
                f"Which {P} is the {c1} nearest to {o2} on?",
                f"MATCH (x:{OB} {{class: '{c1}'}}), (ref:{OB} {{nodeSymbol: '{o2}'}}) WHERE x <> ref "
                f"WITH x ORDER BY point.distance(x.center, ref.center) LIMIT 1 "
                f"MATCH (p:{P})-[:CONTAINS]->(x) RETURN p.nodeSymbol",
            ),
            (
                f"Are {o1} and {o2} on the same {P}?",
                f"MATCH (a:{OB} {{nodeSymbol: '{o1}'}}), (b:{OB} {{nodeSymbol: '{o2}'}}) "
                f"RETURN EXISTS {{ MATCH (a)<-[:CONTAINS]-(:{P})-[:CONTAINS]->(b) }}",
            ),
            (  # a large object spans several places
                f"Which {_plural(c1)} in {r2} sit on more than one {P}?",
                f"MATCH (r:{R} {{nodeSymbol: '{r2}'}})-[:CONTAINS*]->(p:{P})-[:CONTAINS]->(o:{OB} {{class: '{c1}'}}) "
                "WITH o, count(DISTINCT p) AS n WHERE n > 1 RETURN o.nodeSymbol",
            ),
        ]
        if roles.place_link:
            pl = roles.place_link
            ex += [
                (
                    f"Which {P} nodes are next to the {P} the {cs} is on?",
                    f"MATCH (:{OB} {{class: '{cs}'}})<-[:CONTAINS]-(p:{P})-[:{pl}]-(q:{P}) WHERE q <> p "
                    "RETURN DISTINCT q.nodeSymbol",
                ),
                (
                    f"How many hops from the {P} under {o1} to the {P} under {o3}?",
                    f"MATCH (:{OB} {{nodeSymbol: '{o1}'}})<-[:CONTAINS]-(p:{P}), (:{OB} {{nodeSymbol: '{o3}'}})"
                    f"<-[:CONTAINS]-(q:{P}) MATCH s = shortestPath((p)-[:{pl}*..50]-(q)) RETURN length(s)",
                ),
            ]
    link = roles.region_link
    if link:
        rows = store.query(  # a region between two others: routes around it
            f"MATCH (a:{R})-[:{link}]-(c:{R})-[:{link}]-(b:{R}) WHERE a.nodeSymbol < b.nodeSymbol "
            "RETURN a.nodeSymbol AS a, b.nodeSymbol AS b, c.nodeSymbol AS c ORDER BY a, b, c LIMIT 1"
        ).rows
        ra, rb, rc = (str(rows[0][k]) for k in "abc") if rows else (r1, r2, "R3")
        rcls = _pick(v.region_classes, 0, None)
        near = f"the {rcls}" if rcls else r2
        where = f"{{class: '{rcls}'}}" if rcls else f"{{nodeSymbol: '{r2}'}}"
        ex += [
            (
                f"How many {_plural(c1)} are in the {rl}s next to {r2}?",
                f"MATCH (a:{R} {{nodeSymbol: '{r2}'}})-[:{link}]-(r:{R})-[:CONTAINS*]->(o:{OB} {{class: '{c1}'}}) "
                "RETURN count(DISTINCT o)",
            ),
            (
                f"What kinds of {OB.lower()}s are in the {rl}s next to {near}?",
                f"MATCH (a:{R} {where})-[:{link}]-(r:{R})-[:CONTAINS*]->(o:{OB}) RETURN DISTINCT o.class",
            ),
            (
                f"Which {rl}s connect to only one other {rl}?",
                f"MATCH (a:{R})-[:{link}]-(b:{R}) WITH a, count(DISTINCT b) AS n WHERE n = 1 RETURN a.nodeSymbol",
            ),
            (
                f"Can I get from {ra} to {rb} without going through {rc}?",
                f"MATCH (a:{R} {{nodeSymbol: '{ra}'}}), (b:{R} {{nodeSymbol: '{rb}'}}) RETURN EXISTS {{ "
                f"MATCH p = (a)-[:{link}*1..6]-(b) WHERE NONE(x IN nodes(p) WHERE x.nodeSymbol = '{rc}') }}",
            ),
            (
                f"How many different shortest routes are there from {ra} to {rb}?",
                f"MATCH (a:{R} {{nodeSymbol: '{ra}'}}), (b:{R} {{nodeSymbol: '{rb}'}}) "
                f"MATCH p = allShortestPaths((a)-[:{link}*..10]-(b)) RETURN count(p)",
            ),
            (  # a region on every route between two others (no route avoids it)
                f"Which {rl} does every route from {ra} to {rb} pass through?",
                f"MATCH (a:{R} {{nodeSymbol: '{ra}'}}), (b:{R} {{nodeSymbol: '{rb}'}}), (m:{R}) WHERE m <> a AND "
                f"m <> b AND NOT EXISTS {{ MATCH p = (a)-[:{link}*1..6]-(b) WHERE NONE(x IN nodes(p) WHERE x = m) }} "
                "RETURN m.nodeSymbol",
            ),
            (
                f"Which {rl}s have no direct connection to {rc}?",
                f"MATCH (a:{R} {{nodeSymbol: '{rc}'}}), (b:{R}) WHERE b <> a AND NOT EXISTS {{ MATCH (a)-[:{link}]-(b) }} "
                "RETURN b.nodeSymbol",
            ),
        ]
        if P and roles.place_link:
            pl = roles.place_link
            ex += [
                (  # a place's links counted inside one region
                    f"Inside {rc}, which {P} has the most direct links to other {P} nodes?",
                    f"MATCH (r:{R} {{nodeSymbol: '{rc}'}})-[:CONTAINS*]->(a:{P})-[:{pl}]-(b:{P}) "
                    "WITH a, count(DISTINCT b) AS n ORDER BY n DESC LIMIT 1 RETURN a.nodeSymbol",
                ),
                (  # the regions of a place's neighbours
                    f"Which {rl}s do the {P} nodes next to {_pick(v.places, 0, 'P1')} belong to?",
                    f"MATCH (a:{P} {{nodeSymbol: '{_pick(v.places, 0, 'P1')}'}})-[:{pl}]-(q:{P})<-[:CONTAINS*]-"
                    f"(r:{R}) RETURN DISTINCT r.nodeSymbol",
                ),
                (  # the places where two neighbouring regions meet
                    f"Which {P} nodes of {ra} link directly to a {P} of {rc}?",
                    f"MATCH (a:{R} {{nodeSymbol: '{ra}'}})-[:CONTAINS*]->(p:{P})-[:{pl}]-(q:{P})"
                    f"<-[:CONTAINS*]-(b:{R} {{nodeSymbol: '{rc}'}}) RETURN DISTINCT p.nodeSymbol",
                ),
            ]
    return ex


def _upper_layer_examples(
    store: GraphStore, roles: GraphRoles, v: _Values, *, c1: str, c2: str, c3: str, o2: str
) -> list[tuple[str, str]]:
    """Questions about the layer that holds the regions (a building's floors): what is on which floor."""
    U, R, OB = roles.upper, roles.region, roles.leaf
    levels = "level" in store.schema().node_properties.get(U or "", {})
    order = "f.level, f.nodeSymbol" if levels else "f.nodeSymbol"
    rows = store.query(f"MATCH (f:`{U}`) RETURN f.nodeSymbol AS s ORDER BY {order}", max_rows=50).rows
    floors = [str(r["s"]) for r in rows if r.get("s")]
    if not floors or not R or not OB:
        return []
    f0, f1 = floors[0], floors[-1]
    ul, rl = U.lower(), R.lower()
    rc = _pick(v.region_classes, 0, None)
    ex = [
        (
            f"How many {rl}s are on {f0}?",
            f"MATCH (f:{U} {{nodeSymbol: '{f0}'}})-[:CONTAINS*]->(r:{R}) RETURN count(DISTINCT r)",
        ),
        (
            f"How many {_plural(c1)} are on {f1}?",
            f"MATCH (f:{U} {{nodeSymbol: '{f1}'}})-[:CONTAINS*]->(o:{OB} {{class: '{c1}'}}) RETURN count(DISTINCT o)",
        ),
        (
            f"Which {ul} is {o2} on?",
            f"MATCH (f:{U})-[:CONTAINS*]->(o:{OB} {{nodeSymbol: '{o2}'}}) RETURN f.nodeSymbol",
        ),
        (
            f"Is there a {c3} on {f1}?",
            f"OPTIONAL MATCH (f:{U} {{nodeSymbol: '{f1}'}})-[:CONTAINS*]->(o:{OB} {{class: '{c3}'}}) "
            "RETURN count(o) > 0",
        ),
        (
            f"How many {_plural(c2)} are on each {ul}?",
            f"MATCH (f:{U}) OPTIONAL MATCH (f)-[:CONTAINS*]->(o:{OB} {{class: '{c2}'}}) "
            "RETURN f.nodeSymbol, count(DISTINCT o)",
        ),
        (
            f"Which {rl}s on {f1} have a {c3}?",
            f"MATCH (f:{U} {{nodeSymbol: '{f1}'}})-[:CONTAINS*]->(r:{R})-[:CONTAINS*]->(o:{OB} {{class: '{c3}'}}) "
            "RETURN DISTINCT r.nodeSymbol",
        ),
        (
            f"Which {ul} has the most {rl}s?",
            f"MATCH (f:{U})-[:CONTAINS*]->(r:{R}) WITH f, count(DISTINCT r) AS n ORDER BY n DESC LIMIT 1 "
            "RETURN f.nodeSymbol",
        ),
    ]
    ex.append(
        (
            f"Are there more {_plural(c2)} on {f0} than on {f1}?",
            _two_counts(U, f0, f1, OB, c2, ">"),
        )
    )
    if rc and roles.region_size:
        ex.append(
            (
                f"Is the {rc.replace('_', ' ')} on {f0} bigger than the one on {f1}?",
                f"MATCH (:{U} {{nodeSymbol: '{f0}'}})-[:CONTAINS*]->(a:{R} {{class: '{rc}'}}), "
                f"(:{U} {{nodeSymbol: '{f1}'}})-[:CONTAINS*]->(b:{R} {{class: '{rc}'}}) "
                f"RETURN a.{roles.region_size} > b.{roles.region_size}",
            )
        )
    if rc:
        ex += [
            (
                f"Which {ul} is the {rc.replace('_', ' ')} on?",
                f"MATCH (f:{U})-[:CONTAINS*]->(r:{R} {{class: '{rc}'}}) RETURN DISTINCT f.nodeSymbol",
            ),
            (
                f"Which {_plural(rc)} are on {f0}?",
                f"MATCH (f:{U} {{nodeSymbol: '{f0}'}})-[:CONTAINS*]->(r:{R} {{class: '{rc}'}}) RETURN r.nodeSymbol",
            ),
            (
                f"What {_plural(c2)} are in the {rc.replace('_', ' ')} on {f1}?",
                f"MATCH (f:{U} {{nodeSymbol: '{f1}'}})-[:CONTAINS*]->(r:{R} {{class: '{rc}'}})-[:CONTAINS*]->"
                f"(o:{OB} {{class: '{c2}'}}) RETURN DISTINCT o.nodeSymbol",
            ),
        ]
    return ex


def _part_examples(store: GraphStore, roles: GraphRoles, v: _Values) -> list[tuple[str, str]]:
    """Questions about the parts of leaves (handles, knobs, faucets on objects) through their edge type."""
    OB, PT, link, R = roles.leaf, roles.part, roles.part_link, roles.region
    rows = store.query(
        f"MATCH (o:`{OB}`)-[:`{link}`]->(e:`{PT}`) RETURN o.class AS oc, e.class AS pc, count(*) AS n, "
        "min(o.nodeSymbol) AS o, min(e.nodeSymbol) AS e ORDER BY n DESC, oc, pc LIMIT 1"
    ).rows
    if not rows or not rows[0].get("pc"):
        return []
    oc, pc, osym, esym = (str(rows[0][k]) for k in ("oc", "pc", "o", "e"))
    pw = _plural(pc)
    ex = [
        (
            f"How many {pw} does {osym} have?",
            f"MATCH (o:{OB} {{nodeSymbol: '{osym}'}})-[:{link}]->(e:{PT} {{class: '{pc}'}}) RETURN count(e)",
        ),
        (
            f"How many {pw} are on the {_plural(oc)} in total?",
            f"MATCH (o:{OB} {{class: '{oc}'}})-[:{link}]->(e:{PT} {{class: '{pc}'}}) RETURN count(DISTINCT e)",
        ),
        (
            f"Which {OB.lower()}s have a {pc}?",
            f"MATCH (o:{OB})-[:{link}]->(:{PT} {{class: '{pc}'}}) RETURN DISTINCT o.nodeSymbol",
        ),
        (
            f"What is {esym} attached to?",
            f"MATCH (o:{OB})-[:{link}]->(e:{PT} {{nodeSymbol: '{esym}'}}) RETURN o.nodeSymbol",
        ),
        (
            f"What parts does the {oc.replace('_', ' ')} have?",
            f"MATCH (o:{OB} {{class: '{oc}'}})-[:{link}]->(e:{PT}) RETURN e.nodeSymbol",
        ),
    ]
    rc = _pick(v.region_classes, 0, None)
    if R and rc:
        ex.append(
            (
                f"How many {pw} are there in the {rc.replace('_', ' ')}?",
                f"MATCH (r:{R} {{class: '{rc}'}})-[:CONTAINS|{link}*]->(e:{PT} {{class: '{pc}'}}) "
                "RETURN count(DISTINCT e)",
            )
        )
    return ex


def _attribute_examples(
    store: GraphStore, roles: GraphRoles, *, cs: str, o1: str, c1: str
) -> list[tuple[str, str]]:
    """Questions about a listed property of leaves (colour): its value, and nodes filtered by it."""
    OB, key = roles.leaf, roles.leaf_attribute
    rows = store.query(
        f"MATCH (o:`{OB}`) WHERE o.`{key}` IS NOT NULL RETURN o.class AS c, o.`{key}` AS a, count(*) AS n "
        "ORDER BY n DESC, c, a LIMIT 1"
    ).rows
    if not rows:
        return []
    ca, val = str(rows[0]["c"]), str(rows[0]["a"])
    word = key.replace("_", " ")
    return [
        (f"What {word} is {o1}?", f"MATCH (o:{OB} {{nodeSymbol: '{o1}'}}) RETURN o.{key}"),
        (f"What {word} is the {cs.replace('_', ' ')}?", f"MATCH (o:{OB} {{class: '{cs}'}}) RETURN o.{key}"),
        (f"How many {val} {OB.lower()}s are there?", f"MATCH (o:{OB} {{{key}: '{val}'}}) RETURN count(o)"),
        (
            f"Which {_plural(ca)} are {val}?",
            f"MATCH (o:{OB} {{class: '{ca}', {key}: '{val}'}}) RETURN o.nodeSymbol",
        ),
        (
            f"What {word}s do the {_plural(c1)} have?",
            f"MATCH (o:{OB} {{class: '{c1}'}}) RETURN DISTINCT o.{key}",
        ),
    ]


def _reference_property(store: GraphStore, schema: GraphSchema, label: str | None) -> str | None:
    """A string property of ``label`` whose values are symbols of other nodes (``on: 'O183'``: what an
    object stands on), found by sampling; None when there is none."""
    skip = {ont.SYMBOL_KEY, ont.CLASS_KEY, ont.DESCRIPTION_KEY, "name", "room"}
    for key, info in sorted(schema.node_properties.get(label or "", {}).items()):
        if info.type != "STRING" or info.values is not None or key in skip or not re.fullmatch(r"\w+", key):
            continue
        rows = store.query(
            f"MATCH (n:`{label}`) WHERE n.`{key}` IS NOT NULL RETURN n.`{key}` AS v LIMIT 20"
        ).rows
        if rows and all(ont.has_symbol_shape(r.get("v")) for r in rows):
            return key
    return None


def _reference_examples(store: GraphStore, OB: str, ref: str) -> list[tuple[str, str]]:
    """Questions through a property that names another node (what stands on what), filled with the pair
    of classes it joins most often in this graph."""
    rows = store.query(
        f"MATCH (o:`{OB}`), (t:`{OB}`) WHERE o.`{ref}` = t.nodeSymbol RETURN o.class AS oc, t.class AS tc, "
        "count(*) AS n, min(t.nodeSymbol) AS t ORDER BY n DESC, oc, tc LIMIT 1"
    ).rows
    if not rows or not rows[0].get("tc"):
        return []
    oc, tc, tsym = str(rows[0]["oc"]), str(rows[0]["tc"]), str(rows[0]["t"])
    word, tv = ref.replace("_", " "), _var_name(tc)
    return [
        (f"What is {word} {tsym}?", f"MATCH (o:{OB}) WHERE o.{ref} = '{tsym}' RETURN o.nodeSymbol"),
        (
            f"What is {word} the {tc.replace('_', ' ')}?",
            f"MATCH ({tv}:{OB} {{class: '{tc}'}}), (o:{OB}) WHERE o.{ref} = {tv}.nodeSymbol RETURN o.nodeSymbol",
        ),
        (
            f"How many {_plural(oc)} are {word} {_plural(tc)}?",
            f"MATCH (x:{OB} {{class: '{oc}'}}), ({tv}:{OB} {{class: '{tc}'}}) WHERE x.{ref} = {tv}.nodeSymbol "
            "RETURN count(DISTINCT x)",
        ),
        (
            f"What is the {oc.replace('_', ' ')} {word}?",
            f"MATCH (o:{OB} {{class: '{oc}'}}), (t:{OB}) WHERE o.{ref} = t.nodeSymbol RETURN DISTINCT t.nodeSymbol",
        ),
    ]


def _two_counts(container: str | None, a: str, b: str, leaf: str | None, cls: str, op: str) -> str:
    """Cypher comparing how many ``cls`` leaves two named containers hold (``op``: ``-`` for how many more,
    ``>`` for whether more), each count 0 where there are none."""
    return (
        f"MATCH (a:{container} {{nodeSymbol: '{a}'}}) OPTIONAL MATCH (a)-[:CONTAINS*]->(x:{leaf} {{class: '{cls}'}}) "
        f"WITH count(DISTINCT x) AS na MATCH (b:{container} {{nodeSymbol: '{b}'}}) OPTIONAL MATCH "
        f"(b)-[:CONTAINS*]->(y:{leaf} {{class: '{cls}'}}) WITH na, count(DISTINCT y) AS nb RETURN na {op} nb"
    )


def _trajectory_examples(
    store: GraphStore, roles: GraphRoles, OB: str, P: str | None
) -> list[tuple[str, str]]:
    """Questions about the robot's trajectory (the agent layer: poses chained by ``*_CONNECTED``)."""
    A, al = roles.agent, roles.agent_link
    word = A.lower() if A else "agent"
    rows = store.query(
        f"MATCH (a:{A}) RETURN a.nodeSymbol AS s ORDER BY a.nodeSymbol DESC LIMIT 1", max_rows=1
    ).rows
    last = str(rows[0]["s"]) if rows else "a1"
    ex = [
        (f"How many {word} poses are in the trajectory?", f"MATCH (a:{A}) RETURN count(a)"),
        (
            f"Which {word} poses are the two ends of the trajectory?",
            f"MATCH (a:{A}) WHERE COUNT {{ MATCH (a)-[:{al}]-(:{A}) }} = 1 RETURN a.nodeSymbol",
        ),
        (
            f"How long is the {word}'s path, adding up the steps between consecutive poses?",
            f"MATCH (a:{A})-[:{al}]->(b:{A}) RETURN sum(point.distance(a.center, b.center))",
        ),
        (
            f"Which {OB.lower()} is nearest to pose {last}?",
            f"MATCH (o:{OB}), (a:{A} {{nodeSymbol: '{last}'}}) "
            "RETURN o.nodeSymbol ORDER BY point.distance(o.center, a.center) LIMIT 1",
        ),
    ]
    if P and roles.agent_in_place:
        ex.append(
            (
                f"How many different {P} nodes hold {word} poses?",
                f"MATCH (p:{P})-[:CONTAINS]->(a:{A}) RETURN count(DISTINCT p)",
            )
        )
    return ex


def _instruction_examples(roles: GraphRoles, v: _Values, **n: str) -> list[CypherExample]:
    """The language's instruction templates (words file ``instruction_examples``) filled with this graph's
    symbols and classes; a template needing a layer the graph lacks is left out."""
    R, P = roles.region, roles.place
    slots = dict(n)
    slots["num"] = re.sub(r"\D", "", n["o1"]) or "1"
    slots["c1_pl"], slots["c2_pl"] = _plural(n["c1"]), _plural(n["c2"])
    if R and v.region_classes:
        slots["rc1"] = v.region_classes[0]
        slots["rc2"] = v.region_classes[1] if len(v.region_classes) > 1 else slots["rc1"]
        slots["rc2_pl"] = _plural(slots["rc2"])
        slots["r1"] = _pick(v.regions, 0, "R1")
        slots["r_last"] = _pick(v.regions, -1, slots["r1"])
    if P and v.places:
        slots["p1"], slots["p2"] = v.places[0], v.places[-1]
        slots["n1"], slots["n2"] = re.sub(r"\D", "", v.places[0]), re.sub(r"\D", "", v.places[-1])
        slots["place"] = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", P).lower()  # MeshPlace -> mesh place
    return [
        CypherExample(item["q"], "", item["goal"])
        for item in fill_templates(load_words().instruction_examples, slots)
    ]


class ExampleLibrary:
    """Examples of one graph and how to find the k most similar to a question.

    Similarity: cosine between embeddings of the *masked* question and masked examples (entity mentions
    replaced by their kind) when an embedder is given, else word-overlap (Jaccard) of the masked texts.
    """

    def __init__(self, examples: Sequence[CypherExample], *, embedder: Embedder | None = None) -> None:
        self.examples = list(examples)
        self.embedder = embedder
        self._vectors: Any = None

    @classmethod
    def for_store(
        cls,
        store: GraphStore,
        *,
        embedder: Embedder | None = None,
        user_files: Sequence[str | Path] = (),
        linker: Any = None,
        generated: Sequence[CypherExample] | None = None,
    ) -> ExampleLibrary:
        """Template examples of ``store``'s graph plus the examples of ``user_files`` (YAML); ``generated``:
        the template examples made earlier (:func:`generate_examples`, e.g. while a model loads)."""
        examples = list(generated) if generated is not None else generate_examples(store.schema(), store)
        for path in user_files:
            examples += load_examples(path)
        if linker is not None:
            masked = _masked_questions(examples, linker)
            examples = [
                CypherExample(e.question, e.cypher, e.goal, m, e.source)
                for e, m in zip(examples, masked, strict=True)
            ]
        return cls(examples, embedder=embedder)

    def validate(self, store: GraphStore) -> list[tuple[CypherExample, str]]:
        """Examples whose Cypher fails on ``store`` (each with the error): a check, not a filter."""
        bad = []
        for e in self.examples:
            if not e.cypher:
                continue
            try:
                store.query(e.cypher, timeout_s=10.0, max_rows=50)
            except SceneRagError as exc:
                bad.append((e, str(exc)))
        return bad

    def retrieve(
        self, question: str, k: int = 6, *, task: str = "qa", masked: str | None = None
    ) -> list[CypherExample]:
        """The ``k`` examples of ``task`` most similar to ``question`` (most similar last: nearest the question
        in the prompt)."""
        pool = [i for i, e in enumerate(self.examples) if e.task == task]
        if not pool or k <= 0:
            return []
        text = masked or question
        if self.embedder is not None:
            import numpy as np

            if self._vectors is None:
                self._vectors = self._example_vectors()
            q = self.embedder.embed([text])[0]
            scores = {i: float(np.dot(self._vectors[i], q)) for i in pool}
        else:
            qw = _words(text)
            scores = {
                i: _jaccard(qw, _words(self.examples[i].masked or self.examples[i].question)) for i in pool
            }
        best = sorted(pool, key=lambda i: (-scores[i], i))[:k]
        return [self.examples[i] for i in reversed(best)]

    def _example_vectors(self) -> Any:
        """Embeddings of the (masked) example questions, cached on disk by text and embedder: a fresh
        ``scenerag ask`` process embeds only its question."""
        import hashlib

        import numpy as np

        from scenerag.llm.model_files import cache_dir

        texts = [e.masked or e.question for e in self.examples]
        assert self.embedder is not None
        key = hashlib.sha256(("\x1f".join([self.embedder.name, *texts])).encode()).hexdigest()[:32]
        file = cache_dir() / "examples" / f"{key}.npy"
        try:
            vectors = np.load(file)
            if vectors.shape[0] == len(texts):
                return vectors
        except (OSError, ValueError):
            pass
        vectors = self.embedder.embed(texts)
        _save_cache(file, lambda tmp: np.save(tmp, vectors), ".npy")
        return vectors


def _masked_questions(examples: Sequence[CypherExample], linker: Any) -> list[str]:
    """Each example question with its mentions masked (what retrieval compares), cached on disk by the
    questions and the linker's vocabulary: linking ~100 examples costs a fresh ``scenerag ask`` ~1 s."""
    import hashlib
    import json

    from scenerag.agents.linking import mask_question
    from scenerag.llm.model_files import cache_dir

    vocab = linker.vocabulary()
    embedder = getattr(linker.embedder, "name", "none")
    material = json.dumps(
        [
            [e.question for e in examples],
            sorted((k, sorted(v)) for k, v in vocab.values.items()),
            sorted(vocab.prefixes.items()),
            sorted((list(k), list(v)) for k, v in vocab.members.items()),
            sorted(linker.lexicon.items()),
            [linker.min_similarity, linker.min_margin, embedder],
        ],
        default=str,
    )
    file = cache_dir() / "examples" / f"masked-{hashlib.sha256(material.encode()).hexdigest()[:32]}.json"
    try:
        cached = json.loads(file.read_text(encoding="utf-8"))
        if isinstance(cached, list) and len(cached) == len(examples):
            return [str(m) for m in cached]
    except (OSError, ValueError):
        pass
    masked = [mask_question(e.question, linker.link(e.question)) for e in examples]
    _save_cache(file, lambda tmp: tmp.write_text(json.dumps(masked), encoding="utf-8"), "")
    return masked


def _save_cache(file: Path, write: Callable[[Path], object], suffix: str) -> None:
    """Write ``file`` through ``write(temporary sibling ending in suffix)`` and an atomic rename; a read-only
    or full cache directory only costs time, so its errors are ignored."""
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        tmp = file.with_name(f"{file.stem}.{os.getpid()}.tmp{suffix}")
        write(tmp)
        tmp.replace(file)
    except OSError:
        pass


def load_examples(path: str | Path) -> list[CypherExample]:
    """User examples from a YAML file ``{examples: [{question, cypher, goal?}]}``."""
    import yaml

    p = Path(path)
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ExampleLoadError(
            f"{p}: cannot read examples: {exc}", hint="a YAML file with examples: [...]"
        ) from exc
    items = data.get("examples") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise ExampleLoadError(f"{p}: no 'examples' list", hint="examples: [{question: ..., cypher: ...}]")
    out = []
    for i, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("question"), str):
            raise ExampleLoadError(f"{p}: examples[{i}] needs a 'question' string", hint="see the docstring")
        cypher, goal = item.get("cypher") or "", item.get("goal")
        if not cypher and goal is None:
            raise ExampleLoadError(
                f"{p}: examples[{i}] needs 'cypher' (a question) or 'goal' (an instruction)"
            )
        out.append(
            CypherExample(
                item["question"], str(cypher), None if goal is None else str(goal), "", f"{p.name}#{i}"
            )
        )
    return out


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z\[\]]+", text.lower()))


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / math.sqrt(len(a) * len(b)) if a and b else 0.0


def linked_values(links: Sequence[Link]) -> list[str]:
    """Distinct values of ``links`` (for logging)."""
    return list(dict.fromkeys(link.value for link in links))


_THRESHOLD = re.compile(r"(?:[<>]=?|=)\s*(\d+(?:\.\d+)?)\b")
_QUESTION_NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)(?![\w.])")


def unclash(example: CypherExample, named: set[str], spare: Sequence[str]) -> CypherExample:
    """``example`` with each node symbol the question also names swapped for an unused ``spare`` symbol of
    the same letter: an example whose R5 is the goal misleads an instruction whose R5 is to be avoided."""
    pattern = re.compile(r"\b[A-Za-z]\d+\b")
    text = f"{example.question}\n{example.goal or ''}\n{example.cypher}"
    clashes = [s for s in dict.fromkeys(pattern.findall(text)) if s in named]
    if not clashes:
        return example
    used = set(pattern.findall(text)) | named
    question, goal, cypher = example.question, example.goal, example.cypher
    for symbol in clashes:
        other = next((s for s in spare if s[:1] == symbol[:1] and s not in used), None)
        if other is None:
            continue
        used.add(other)

        def swap(t: str, symbol: str = symbol, other: str = other) -> str:
            return re.sub(rf"\b{symbol}\b", other, t)

        # the question may say the symbol's number alone ("object 79" for O79)
        question = re.sub(rf"(?<![\w.]){symbol[1:]}\b", other[1:], swap(question))
        goal = None if goal is None else swap(goal)
        cypher = swap(cypher)
    return CypherExample(question, cypher, goal, example.masked, example.source)


def adapt_example(
    example: CypherExample,
    links: Sequence[Link],
    question: str,
    owner: Callable[[str], tuple[str, str] | None],
) -> str | None:
    """``example``'s query with its values swapped for the question's: each string literal's kind
    (``owner``: literal -> (label, key), e.g. ``'sink'`` -> ``('Object', 'class')``) takes the question's
    linked values of that kind in question order, and threshold numbers (``< 2``) the question's numbers.
    None unless the two use exactly the same kinds and counts of values (a question about a room and a
    class does not fit an example about two classes)."""
    lowered = question.lower()
    ordered = sorted(links, key=lambda link: (lowered.find(link.mention.lower()), link.mention))
    given: dict[tuple[str, str], list[str]] = {}
    for link in ordered:
        values = given.setdefault((link.label, link.key), [])
        if link.value not in values:
            values.append(link.value)
    slots: dict[tuple[str, str], list[tuple[int, int, str]]] = {}
    for m in re.finditer(r"'([^']*)'", example.cypher):
        kind = owner(m.group(1))
        if kind is None:
            return None
        slots.setdefault(kind, []).append((m.start(), m.end(), m.group(1)))
    if set(slots) != set(given):
        return None
    edits: list[tuple[int, int, str]] = []
    for kind, spans in slots.items():
        distinct = list(dict.fromkeys(value for _, _, value in spans))
        if len(distinct) != len(given[kind]):
            return None
        swap = dict(zip(distinct, given[kind], strict=True))
        edits += [(start, end, "'" + swap[value].replace("'", "\\'") + "'") for start, end, value in spans]
    unlinked = lowered
    for link in links:  # "bathroom 2", "R5": numbers inside names and symbols are no thresholds
        for mention in link.mentions:
            unlinked = unlinked.replace(mention.lower(), " ")
    numbers = _QUESTION_NUMBER.findall(re.sub(r"\b[a-z]\d+\b", " ", unlinked))
    thresholds = list(_THRESHOLD.finditer(example.cypher))
    if len(numbers) != len(thresholds):
        return None
    edits += [(m.start(1), m.end(1), n) for m, n in zip(thresholds, numbers, strict=True)]
    return apply_edits(example.cypher, edits)
