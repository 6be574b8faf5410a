"""Worked examples for few-shot prompting: (question -> Cypher) and (instruction -> Cypher + goal sketch) pairs
generated from the *live* graph, plus user-supplied ones, and the retrieval of the k most similar.

Templates are the language's (words files ``examples-<lang>.yaml``, ``<lang>.yaml``) and are written against
roles, not names: the region label (``Room``), the leaf label (``Object``), the place layer between them and
each layer's ``*_CONNECTED`` type come from the schema; classes, symbols and coordinates are the graph's own
(:func:`_qa_slots`). So the library works on any scene graph whose schema has those roles, and every
generated query is one that runs on it (:meth:`ExampleLibrary.validate` checks).

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
    """Template examples instantiated with ``store``'s graph: the language's question templates (words file
    ``qa_examples``) filled with :func:`_qa_slots`, those naming a slot the graph has no value for left out,
    then its instruction templates."""
    roles = GraphRoles.from_schema(schema)
    if not roles.leaf:
        return []
    v = _values(store, roles)
    slots = _qa_slots(store, schema, roles, v)
    ex = [(t["q"], t["cypher"]) for t in fill_templates(load_words().qa_examples, slots)]
    # a class that only repeats its label (every Object is class 'object') names nothing a user would say
    plain = {ont.layer_name(label) for label in schema.node_counts}
    hollow = [f"'{c}'" for c in [*v.classes, *v.region_classes] if c.lower() in plain]
    ex = [(q, c) for q, c in ex if not any(h in c for h in hollow)]
    out = [CypherExample(_layer_words(q, schema), c) for q, c in ex]
    shared = ("o1", "o2", "c1", "c2", "c3", "cs", "c1_pl", "c2_pl", "rc1", "rc2", "rc2_pl")
    out += _instruction_examples(roles, v, **{k: slots[k] for k in shared if k in slots})
    return out


def _qa_slots(store: GraphStore, schema: GraphSchema, roles: GraphRoles, v: _Values) -> dict[str, str]:
    """The values the question templates are filled with, by slot (``examples-<lang>.yaml`` names them). A
    slot is set only where the graph has what it stands for (``R`` where it has regions, ``bbox`` where its
    leaves have boxes), so a template using it drops out elsewhere. ``roles.leaf`` must be set."""
    return {
        **_leaf_slots(roles, v),
        **_region_slots(store, roles, v),
        **_place_slots(roles, v),
        **_trajectory_slots(store, roles),
        **_reference_slots(store, schema, roles),
        **_part_slots(store, roles),
        **_attribute_slots(store, roles),
    }


def _leaf_slots(roles: GraphRoles, v: _Values) -> dict[str, str]:
    """Slots of the leaf layer: its label, classes, symbols, a point and a height (every graph has these),
    ``bbox`` where leaves have boxes and ``s1`` ``s2`` where two classes have one node each."""
    OB = str(roles.leaf)
    classes = v.classes or list(load_words().placeholder_classes)
    c1, c2, c3 = (str(_pick(classes, i, "")) for i in range(3))
    cs = v.singleton_class or c3
    symbols = [s for s, _, _ in v.leaves]
    o1, o2, o3 = _pick(symbols, 3, "O1"), _pick(symbols, 11, "O2"), _pick(symbols, 17, "O3")
    p1 = _pick([p for _, _, p in v.leaves], 3, (0.0, 0.0, 0.0))
    x, y, z = (round(t + d, 1) for t, d in zip(p1, (0.6, -0.4, 0.2), strict=True))
    heights = sorted(p[2] for _, _, p in v.leaves) or [1.0]
    high = round(heights[(3 * len(heights)) // 4], 1)  # a height some leaves are above
    slots = {
        "OB": OB,
        "ob": OB.lower(),
        "c1": c1,
        "c2": c2,
        "c3": c3,
        "cs": cs,
        "c1_pl": _plural(c1),
        "c2_pl": _plural(c2),
        "c3_pl": _plural(c3),
        "cs_name": cs.replace("_", " "),
        # a reference node named after its class: small models then filter the right node
        "cs_var": _var_name(cs),
        "c1_var": _var_name(c1),
        "o1": o1,
        "o2": o2,
        "o3": o3,
        "x": str(x),
        "y": str(y),
        "z": str(z),
        "high": str(high),
    }
    if roles.has_bbox:
        slots["bbox"] = ont.BBOX_DIM_KEY
    if len(v.singleton_classes) > 1:  # two things named by their classes, one node each
        slots["s1"], slots["s2"] = v.singleton_classes[:2]
    return slots


def _region_slots(store: GraphStore, roles: GraphRoles, v: _Values) -> dict[str, str]:
    """Slots of the region layer (empty where the graph has none): its label and symbols, its classes (or
    ``r_unclassed`` where it has none), its links, its size and the layer above it."""
    R = roles.region
    if not R:
        return {}
    r1, r2 = _pick(v.regions, 0, "R1"), _pick(v.regions, 1, "R2")
    slots = {"R": R, "rl": R.lower(), "r1": r1, "r2": r2, "r3": _pick(v.regions, 2, "R3")}
    if v.region_classes:
        rc1, rc2 = v.region_classes[0], _pick(v.region_classes, 1, None)
        slots |= {"rc1": rc1, "rc2": rc2, "rc1_name": rc1.replace("_", " ")}
        slots |= {"rc1_pl": _plural(rc1), "rc2_pl": _plural(rc2)}
        if len(v.region_classes) > 1:
            other = v.region_classes[1]
            slots |= {"rc_other": other, "rc_other_pl": _plural(other)}
    else:
        slots["r_unclassed"] = r2
    link = roles.region_link
    if link:
        rows = store.query(  # a region between two others
            f"MATCH (a:{R})-[:{link}]-(c:{R})-[:{link}]-(b:{R}) WHERE a.nodeSymbol < b.nodeSymbol "
            "RETURN a.nodeSymbol AS a, b.nodeSymbol AS b, c.nodeSymbol AS c ORDER BY a, b, c LIMIT 1"
        ).rows
        ra, rb, rm = (str(rows[0][k]) for k in "abc") if rows else (r1, r2, "R3")
        slots |= {"rlink": link, "ra": ra, "rb": rb, "rm": rm}
    if roles.region_size:
        slots["size"] = roles.region_size
    return slots | _upper_slots(store, roles)


def _upper_slots(store: GraphStore, roles: GraphRoles) -> dict[str, str]:
    """Slots of the layer that holds the regions (a building's floors): its label and its first and last
    node; empty where the graph has no such layer."""
    U = roles.upper
    if not U or not roles.region:
        return {}
    levels = "level" in store.schema().node_properties.get(U, {})
    order = "f.level, f.nodeSymbol" if levels else "f.nodeSymbol"
    rows = store.query(f"MATCH (f:`{U}`) RETURN f.nodeSymbol AS s ORDER BY {order}", max_rows=50).rows
    floors = [str(r["s"]) for r in rows if r.get("s")]
    if not floors:
        return {}
    return {"U": U, "ul": U.lower(), "f0": floors[0], "f1": floors[-1]}


def _place_slots(roles: GraphRoles, v: _Values) -> dict[str, str]:
    """Slots of the place layer (empty where the graph has none): its label, ``holds_leaf`` where places
    hold leaves, and its links with two place symbols."""
    P = roles.place
    if not P:
        return {}
    slots = {"P": P}
    if roles.leaf_in_place:
        slots["holds_leaf"] = ont.CONTAINS
    if roles.place_link:
        slots |= {"pl": roles.place_link, "p1": _pick(v.places, 0, "P1"), "p2": _pick(v.places, -1, "P2")}
    return slots


def _trajectory_slots(store: GraphStore, roles: GraphRoles) -> dict[str, str]:
    """Slots of the robot's trajectory (poses chained by ``*_CONNECTED``): its label, edge type and last
    pose, and ``holds_agent`` where places hold poses; empty where the graph has none."""
    A, al = roles.agent, roles.agent_link
    if not A or not al:
        return {}
    rows = store.query(
        f"MATCH (a:{A}) RETURN a.nodeSymbol AS s ORDER BY a.nodeSymbol DESC LIMIT 1", max_rows=1
    ).rows
    slots = {"A": A, "agent": A.lower(), "al": al, "last": str(rows[0]["s"]) if rows else "a1"}
    if roles.place and roles.agent_in_place:
        slots["holds_agent"] = ont.CONTAINS
    return slots


def _reference_slots(store: GraphStore, schema: GraphSchema, roles: GraphRoles) -> dict[str, str]:
    """Slots of a leaf property that names another node (what stands on what), with the pair of classes it
    joins most often in this graph; empty where leaves have no such property."""
    OB = roles.leaf
    ref = _reference_property(store, schema, OB)
    if not ref:
        return {}
    rows = store.query(
        f"MATCH (o:`{OB}`), (t:`{OB}`) WHERE o.`{ref}` = t.nodeSymbol RETURN o.class AS oc, t.class AS tc, "
        "count(*) AS n, min(t.nodeSymbol) AS t ORDER BY n DESC, oc, tc LIMIT 1"
    ).rows
    if not rows or not rows[0].get("tc"):
        return {}
    oc, tc, tsym = str(rows[0]["oc"]), str(rows[0]["tc"]), str(rows[0]["t"])
    return {
        "ref_key": ref,
        "ref_word": ref.replace("_", " "),
        "ref_sym": tsym,
        "ref_cls": oc,
        "ref_cls_pl": _plural(oc),
        "ref_cls_name": oc.replace("_", " "),
        "ref_target": tc,
        "ref_target_pl": _plural(tc),
        "ref_target_name": tc.replace("_", " "),
        "ref_target_var": _var_name(tc),
    }


def _part_slots(store: GraphStore, roles: GraphRoles) -> dict[str, str]:
    """Slots of the parts of leaves (handles, knobs on objects) through their edge type, with the pair of
    classes it joins most often; empty where leaves have no parts."""
    OB, PT, link = roles.leaf, roles.part, roles.part_link
    if not PT or not link:
        return {}
    rows = store.query(
        f"MATCH (o:`{OB}`)-[:`{link}`]->(e:`{PT}`) RETURN o.class AS oc, e.class AS pc, count(*) AS n, "
        "min(o.nodeSymbol) AS o, min(e.nodeSymbol) AS e ORDER BY n DESC, oc, pc LIMIT 1"
    ).rows
    if not rows or not rows[0].get("pc"):
        return {}
    oc, pc, osym, esym = (str(rows[0][k]) for k in ("oc", "pc", "o", "e"))
    return {
        "PT": PT,
        "part_link": link,
        "part_cls": pc,
        "part_pl": _plural(pc),
        "part_sym": esym,
        "part_owner": osym,
        "owner_cls": oc,
        "owner_cls_pl": _plural(oc),
        "owner_cls_name": oc.replace("_", " "),
    }


def _attribute_slots(store: GraphStore, roles: GraphRoles) -> dict[str, str]:
    """Slots of a listed property of leaves (colour): its most common value with the class that has it;
    empty where leaves have none."""
    OB, key = roles.leaf, roles.leaf_attribute
    if not key:
        return {}
    rows = store.query(
        f"MATCH (o:`{OB}`) WHERE o.`{key}` IS NOT NULL RETURN o.class AS c, o.`{key}` AS a, count(*) AS n "
        "ORDER BY n DESC, c, a LIMIT 1"
    ).rows
    if not rows:
        return {}
    ca, val = str(rows[0]["c"]), str(rows[0]["a"])
    return {
        "attr_key": key,
        "attr_word": key.replace("_", " "),
        "attr_val": val,
        "attr_cls": ca,
        "attr_cls_pl": _plural(ca),
    }


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


def _instruction_examples(roles: GraphRoles, v: _Values, **n: str) -> list[CypherExample]:
    """The language's instruction templates (words file ``instruction_examples``) filled with this graph's
    symbols and classes; a template needing a layer the graph lacks is left out. ``n``: the question
    templates' slots these share (:func:`_qa_slots`; ``rc1``, ``rc2``, ``rc2_pl`` only where regions have
    classes)."""
    R, P = roles.region, roles.place
    slots = dict(n)
    slots["num"] = re.sub(r"\D", "", n["o1"]) or "1"
    if R and v.region_classes:
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
