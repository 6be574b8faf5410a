"""A typed form for questions that compare two sides on one measure (more / fewer, which is larger, how many
more), compiled to Cypher here rather than written by the model.

A small model writes each side's count well but swaps the sides of ``RETURN na > nb`` or ranks the wrong
column; here it only names the two sides in the order asked, the measure and what to answer. The reply is
decoded under a grammar of the live graph (its symbols' letters, every layer's classes, the measures the
graph's properties allow), so it always parses and names only what the graph has; the compiler fixes the
shape (both sides measured the same way, the first side on the left). Nothing here reads a sentence: the
model decides, shown worked forms instantiated with the graph's own layers, classes and symbols (templates
of the language's words file), and may reply ``compare: none``.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from scenerag.agents.measure_form import ANY, MeasureForms, form_values
from scenerag.agents.query_repair import cypher_string, return_clause
from scenerag.agents.words import Words, fill_templates
from scenerag.graph import ontology as ont
from scenerag.lang.gbnf import Chars, Grammar, alt, one_of, plus, seq

__all__ = [
    "NONE_COMPARE",
    "CompareForm",
    "CompareForms",
    "as_asked",
    "compares_two",
    "in_direction",
    "parse_compare",
    "ranks_to_one",
]

NONE_COMPARE = "compare: none"
ANSWERS = ("more?", "fewer?", "larger", "smaller", "difference")
#: measures of one node (a side that is a class must have exactly one member for these)
NODE_MEASURES = ("volume", "height", "z", "neighbours")
_KEYS = ("compare", "with", "measure", "answer")
# a comparison of two values in RETURN; one with a number (``count(o) > 0``: whether any exists) is no choice
_RETURN_COMPARES = re.compile(
    r"\bRETURN\b(?:(?!\bRETURN\b).)*?[\w\])]\s*(?:>=|<=|>|<)\s*(?![\d.]+\b)[\w(]", re.I | re.S
)
_CASE = re.compile(r"\bCASE\s+WHEN\b", re.I)
_PAIR = re.compile(r"\bIN\s*\[\s*'[^']*'\s*,\s*'[^']*'\s*\]", re.I)
_LIMIT_ONE = re.compile(r"\bLIMIT\s+1\b", re.I)


def compares_two(cypher: str) -> bool:
    """Whether ``cypher`` compares two values or picks one of two named things (what the form is for): its
    RETURN compares, it branches on a CASE, or it ranks a two-item list down to one."""
    tail = return_clause(cypher)
    if tail and (_RETURN_COMPARES.search(tail) or _CASE.search(tail)):
        return True
    return bool(_PAIR.search(cypher) and _LIMIT_ONE.search(cypher))


def ranks_to_one(cypher: str) -> bool:
    """Whether ``cypher`` orders its rows and keeps the first (``ORDER BY ... LIMIT 1``)."""
    return bool(re.search(r"\bORDER\s+BY\b", cypher, re.I) and _LIMIT_ONE.search(cypher))


@dataclass(frozen=True)
class CompareForm:
    """A filled form: ``first`` and ``second`` (a symbol or a class each) measured by ``measure`` (``count
    <Label> <class|any>`` held inside the side, ``members`` of a class, ``distance <symbol|class>``, or one of
    :data:`NODE_MEASURES`), answered as ``answer`` (:data:`ANSWERS`)."""

    first: str
    second: str
    measure: str
    answer: str

    def render(self) -> str:
        values = (self.first, self.second, self.measure, self.answer)
        return "; ".join(f"{k}: {v}" for k, v in zip(_KEYS, values, strict=True))


def parse_compare(reply: str) -> CompareForm | None:
    """The form in ``reply`` (None for ``compare: none`` or a reply that is not a whole form)."""
    values = form_values(reply, _KEYS)
    if values is None:
        return None
    first, second, measure, answer = values
    if not first or not second or first.lower() == "none" or not measure or answer not in ANSWERS:
        return None
    return CompareForm(first, second, measure, answer)


_AS_YES_NO = {"larger": "more?", "smaller": "fewer?"}
_AS_WHICH = {v: k for k, v in _AS_YES_NO.items()}


def as_asked(form: CompareForm, yes_no: bool, number: bool = False) -> CompareForm:
    """``form`` answering the kind of answer the question asks for (the model picks the measure and the
    sides well, and the answer kind less so): yes/no (``more?`` / ``fewer?``), which of the two (``larger`` /
    ``smaller``), or a number (``difference``)."""
    if number:
        answer = "difference"
    elif form.answer == "difference":
        return form
    else:
        answer = (_AS_YES_NO if yes_no else _AS_WHICH).get(form.answer, form.answer)
    return form if answer == form.answer else dataclasses.replace(form, answer=answer)


def in_direction(form: CompareForm, question: str, words: Words) -> CompareForm:
    """``form`` ranking the way the question's comparatives go (the language's ``larger_words`` /
    ``smaller_words``: "which sits higher up" asks for the larger z), when they go one way only; the answer
    kind (which of two, or yes/no) is kept. Unchanged for a difference, or words both ways or neither."""
    larger = bool(words.says(question, words.larger_words))
    if form.answer == "difference" or larger == bool(words.says(question, words.smaller_words)):
        return form
    which = form.answer in _AS_YES_NO
    answer = ("larger" if larger else "smaller") if which else ("more?" if larger else "fewer?")
    return form if answer == form.answer else dataclasses.replace(form, answer=answer)


class CompareForms:
    """The compare form of one graph: prompt (static, so a local model keeps its KV state), grammar and
    compiler. The graph's vocabulary (layers with a centre, their classes, rooms, symbol letters) is the
    distance form's."""

    def __init__(self, vocabulary: MeasureForms, words: Words) -> None:
        self.vocab = vocabulary
        self.store = vocabulary.store
        self.words = words
        schema = self.store.schema()
        self.has_bbox = any(
            ont.BBOX_DIM_KEY in schema.node_properties.get(label, {}) for label in self.vocab.labels
        )
        #: label -> the relationship types joining two nodes of that label (its neighbours)
        self.neighbour_rels: dict[str, list[str]] = {}
        for src, rel, dst in schema.patterns:
            if src == dst and rel != ont.CONTAINS and src in self.vocab.labels:
                self.neighbour_rels.setdefault(src, []).append(rel)
        #: label -> the labels it holds along CONTAINS (any depth)
        self.holds: dict[str, set[str]] = {}
        for chain in schema.containment_chains():
            for i, label in enumerate(chain):
                self.holds.setdefault(label, set()).update(chain[i + 1 :])
        self.system = self._system()
        self.grammar = self._grammar()

    def _measures(self) -> list[str]:
        out = ["volume", "height"] if self.has_bbox else []
        out.append("z")
        if self.neighbour_rels:
            out.append("neighbours")
        return out

    # -- prompt -----------------------------------------------------------------------------------------
    def _system(self) -> str:
        slots = self.vocab.slots()
        slots["measures"] = ", ".join(self._measures())
        examples = [
            f"Q: {item['q']}\nForm: {item['form']}"
            for item in fill_templates(self.words.compare_examples, slots)
            if item["form"] == NONE_COMPARE or self._fits(parse_compare(item["form"]))
        ]
        intro = self.words.compare_intro.format(layers=slots["layers"], measures=slots["measures"])
        return intro + "\n\n" + "\n\n".join(examples)

    def _fits(self, form: CompareForm | None) -> bool:
        """Whether a worked form names only measures this graph has (a template the graph lacks is left out)."""
        if form is None:
            return False
        head = form.measure.split()[0]
        return head in ("count", "members", "distance") or head in self._measures()

    user = staticmethod(MeasureForms.user)  # the question, after what its words were linked to

    # -- grammar ----------------------------------------------------------------------------------------
    def _grammar(self) -> Grammar:
        digits = plus(Chars("0-9"))
        symbol = seq(one_of(self.vocab.prefixes or ["O"]), digits)
        every_class = sorted({c for classes in self.vocab.classes.values() for c in classes})
        side = alt(symbol, one_of(every_class)) if every_class else symbol
        counts = [
            seq(
                f"count {label} ",
                alt(ANY, one_of(self.vocab.classes[label])) if self.vocab.classes.get(label) else ANY,
            )
            for label in self.vocab.labels
        ]
        measure = alt(*counts, "members", seq("distance ", side), *self._measures())
        form = seq(
            "compare: ", side, "; with: ", side, "; measure: ", measure, "; answer: ", one_of(ANSWERS)
        )  # fmt: skip
        return Grammar({"root": alt(NONE_COMPARE, form)})

    # -- compiler ---------------------------------------------------------------------------------------
    def compile(self, form: CompareForm) -> str | None:
        """The Cypher query ``form`` asks for (None when it names what the graph lacks, or a measure of one
        node on a side that is not one node)."""
        first, second = self._side(form.first), self._side(form.second)
        if first is None or second is None or self._nodes(first) & self._nodes(second):
            return None  # a side compared with itself or with a part of itself ("hallway" and R5)
        head, _, rest = form.measure.partition(" ")
        if head == "count" and first[0] == second[0] == rest.split(" ")[0] and first[0] != "symbol":
            head, rest = "members", ""  # two classes counted in their own layer: how many each has
        ref: str | None = None
        if head == "distance":
            ref = self._one_node(rest.strip())
            if ref is None:
                return None
        parts: list[str] = []
        for var, side, carried in (("a", first, ""), ("b", second, "va, ")):
            value = self._value(var, side, head, rest.strip(), ref)
            if value is None:
                return None
            parts.append(value.replace("WITH ", f"WITH {carried}", 1) if carried else value)
        if form.answer == "more?":
            ret = "RETURN va > vb"
        elif form.answer == "fewer?":
            ret = "RETURN va < vb"
        elif form.answer == "difference":
            ret = "RETURN va - vb"
        else:
            names = [self._name(side, head) for side in (first, second)]
            op = ">" if form.answer == "larger" else "<"
            ret = f"RETURN CASE WHEN va {op} vb THEN {names[0]} ELSE {names[1]} END"
        return " ".join([*parts, ret])

    def _side(self, value: str) -> tuple[str, str] | None:
        """``("symbol", value)`` for a node the graph has, ``(label, value)`` for a class of a layer (the
        region, then the leaf, then the others), None otherwise."""
        return self.vocab.resolve(value, (self.vocab.roles.region, self.vocab.roles.leaf))

    def _nodes(self, side: tuple[str, str]) -> set[str]:
        """The symbols of the nodes ``side`` stands for."""
        kind, value = side
        if kind == "symbol":
            return {value}
        rows = self.store.query(
            f"MATCH (n:`{kind}` {{{ont.CLASS_KEY}: $c}}) RETURN n.{ont.SYMBOL_KEY} AS s",
            {"c": value},
            read_only=True,
        ).rows
        return {str(r["s"]) for r in rows}

    def _label(self, side: tuple[str, str]) -> str:
        """The layer of ``side`` (a symbol's label is looked up)."""
        kind, value = side
        if kind != "symbol":
            return kind
        rows = self.store.query(
            f"MATCH (n {{{ont.SYMBOL_KEY}: $s}}) RETURN labels(n) AS l", {"s": value}, read_only=True
        ).rows
        labels = rows[0]["l"] if rows else []
        return str(labels[0]) if labels else ""

    def _members(self, side: tuple[str, str]) -> int:
        return len(self._nodes(side))

    def _pattern(self, var: str, side: tuple[str, str]) -> str:
        kind, value = side
        if kind == "symbol":
            return f"({var} {{{ont.SYMBOL_KEY}: {cypher_string(value)}}})"
        return f"({var}:`{kind}` {{{ont.CLASS_KEY}: {cypher_string(value)}}})"

    def _one_node(self, value: str) -> str | None:
        """The pattern of ``ref``: a symbol, or a class with exactly one member (None otherwise)."""
        side = self._side(value)
        if side is None or self._members(side) != 1:
            return None
        return self._pattern("ref", side)

    def _value(self, var: str, side: tuple[str, str], head: str, rest: str, ref: str | None) -> str | None:
        """``MATCH ... WITH <value> AS v<var>`` for one side, or None when the measure does not apply."""
        match = f"MATCH {self._pattern(var, side)}"
        out = f"v{var}"
        if head == "count":
            label, _, cls = rest.partition(" ")
            if label not in self.vocab.labels:
                return None
            if cls and cls != ANY and cls not in self.vocab.classes.get(label, []):
                return None
            if label not in self.holds.get(self._label(side), set()):
                return None  # the side cannot hold what is counted: 0 against 0 says nothing
            inner = (
                f"(x{var}:`{label}`"
                + ("" if not cls or cls == ANY else f" {{{ont.CLASS_KEY}: {cypher_string(cls)}}}")
                + ")"
            )
            return f"{match} OPTIONAL MATCH ({var})-[:{ont.CONTAINS}*]->{inner} WITH count(DISTINCT x{var}) AS {out}"
        if head == "members":
            if side[0] == "symbol":
                return None
            return f"OPTIONAL {match} WITH count(DISTINCT {var}) AS {out}"
        if self._members(side) != 1:
            return None
        center, dim = ont.CENTER_KEY, ont.BBOX_DIM_KEY
        if head == "distance" and ref is not None:
            return f"{match} MATCH {ref.replace('(ref', f'(ref{var}', 1)} WITH point.distance({var}.{center}, ref{var}.{center}) AS {out}"
        if head == "volume":
            return f"{match} WITH {var}.{dim}[0] * {var}.{dim}[1] * {var}.{dim}[2] AS {out}"
        if head == "height":
            return f"{match} WITH {var}.{dim}[2] AS {out}"
        if head == "z":
            return f"{match} WITH {var}.{center}.z AS {out}"
        if head == "neighbours":
            label = side[0] if side[0] != "symbol" else None
            rels = sorted({r for key, rs in self.neighbour_rels.items() if label in (None, key) for r in rs})
            if not rels:
                return None
            return f"{match} OPTIONAL MATCH ({var})-[:{'|'.join(rels)}]-(n{var}) WITH count(DISTINCT n{var}) AS {out}"
        return None

    def _name(self, side: tuple[str, str], head: str) -> str:
        """What a "which of the two" answer names for ``side``: its symbol (a class with one member: that
        member's symbol, read off the node), or the class itself where the measure counts its members."""
        kind, value = side
        if kind == "symbol" or head == "members":
            return cypher_string(value)
        nodes = self._nodes(side)
        return cypher_string(next(iter(nodes)) if len(nodes) == 1 else value)
