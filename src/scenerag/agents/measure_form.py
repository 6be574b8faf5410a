"""A typed form for questions that measure straight-line distance between nodes (nearest, farthest, within a
radius, how far), compiled to Cypher here rather than written by the model.

The model fills eight slots (which nodes are asked about, of which class and in which room; which node or
class they are measured from; nearest / farthest / none; a radius; what to answer). Its reply is decoded
under a grammar built from the live graph: layers that have a centre, each layer's own classes, the graph's
rooms, numbers, and symbols of the graph's letters, so it always parses and names only what the graph has
(symbols are looked up before the query is built). The shape a small model gets wrong in free Cypher (the
ranking over the reference, the reference returned, the distance returned for the node) is fixed by the
compiler. Nothing here reads a sentence: the model decides, shown worked forms instantiated with the graph's
own layers, classes and symbols (templates of the language's words file), and may reply ``find: none``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from scenerag.agents.examples import GraphRoles
from scenerag.agents.linking import Link
from scenerag.agents.plan import _slots
from scenerag.agents.query_repair import cypher_string
from scenerag.agents.words import Words, fill_templates
from scenerag.errors import SceneRagError
from scenerag.graph import ontology as ont
from scenerag.lang.gbnf import Chars, Grammar, alt, one_of, opt, plus, seq
from scenerag.store.base import GraphStore

__all__ = ["NONE_FORM", "MeasureForm", "MeasureForms", "form_values", "measures_distance", "parse_form"]

NONE_FORM = "find: none"
ANY = "any"
NO = "-"
RANKS = ("nearest", "farthest", "none")
ANSWERS = ("id", "class", "count", "distance")
_KEYS = ("find", "class", "in", "from", "from in", "rank", "within", "answer")
_SYMBOL = re.compile(r"[A-Za-z]{1,2}\d+")
_DISTANCE = re.compile(r"\bpoint\.distance\s*\(", re.I)


def measures_distance(cypher: str) -> bool:
    """Whether ``cypher`` measures a distance between points (what the form is for)."""
    return bool(_DISTANCE.search(cypher))


@dataclass(frozen=True)
class MeasureForm:
    """A filled form: ``find`` nodes (of ``cls``, inside room ``inside``) measured from ``ref`` (a symbol or a
    class, inside room ``ref_inside``), ranked ``rank``, kept ``within`` metres, answered as ``answer``."""

    find: str
    cls: str = ANY
    inside: str | None = None
    ref: str = ""
    ref_inside: str | None = None
    rank: str = "none"
    within: float | None = None
    answer: str = "id"

    def render(self) -> str:
        within = NO if self.within is None else f"{self.within:g}"
        values = (self.find, self.cls, self.inside or NO, self.ref, self.ref_inside or NO, self.rank, within)
        return "; ".join(f"{k}: {v}" for k, v in zip(_KEYS, (*values, self.answer), strict=True))


def form_values(reply: str, keys: Sequence[str]) -> list[str] | None:
    """The values of a one-line form ``key: value; key: value`` with exactly ``keys`` in order (None when
    ``reply`` is not such a form)."""
    parts = [p.strip() for p in " ".join(reply.split()).rstrip(".").split(";")]
    if len(parts) != len(keys):
        return None
    values: list[str] = []
    for key, part in zip(keys, parts, strict=True):
        if not part.lower().startswith(key + ":"):
            return None
        values.append(part[len(key) + 1 :].strip())
    return values


def parse_form(reply: str) -> MeasureForm | None:
    """The form in ``reply`` (None for ``find: none`` or a reply that is not a whole form)."""
    values = form_values(reply, _KEYS)
    if values is None:
        return None
    find, cls, inside, ref, ref_inside, rank, within, answer = values
    if not find or find.lower() == "none" or not ref or rank not in RANKS or answer not in ANSWERS:
        return None
    try:
        radius = None if within == NO else float(within)
    except ValueError:
        return None
    return MeasureForm(
        find, cls or ANY, None if inside == NO else inside, ref, None if ref_inside == NO else ref_inside,
        rank, radius, answer,
    )  # fmt: skip


class MeasureForms:
    """The form of one graph: prompt (static, so a local model keeps its KV state), grammar and compiler."""

    def __init__(self, store: GraphStore, words: Words) -> None:
        self.store = store
        self.words = words
        schema = store.schema()
        self.roles = GraphRoles.from_schema(schema)
        self.labels = [
            label
            for label in sorted(schema.node_properties)
            if ont.CENTER_KEY in schema.node_properties[label] and schema.node_counts.get(label)
        ]
        self.classes: dict[str, list[str]] = {}
        for label in self.labels:
            rows = store.query(
                f"MATCH (n:`{label}`) WHERE n.{ont.CLASS_KEY} IS NOT NULL RETURN DISTINCT n.{ont.CLASS_KEY} AS c",
                max_rows=500,
            ).rows
            self.classes[label] = sorted({str(r["c"]) for r in rows if r.get("c")})
        self.rooms: list[str] = []
        if self.roles.region:
            rows = store.query(
                f"MATCH (r:`{self.roles.region}`) RETURN r.{ont.SYMBOL_KEY} AS s ORDER BY s", max_rows=500
            ).rows
            self.rooms = [str(r["s"]) for r in rows if r.get("s")]
        rows = store.query(
            f"MATCH (n) WHERE n.{ont.SYMBOL_KEY} IS NOT NULL RETURN DISTINCT left(n.{ont.SYMBOL_KEY}, 1) AS p",
            max_rows=50,
        ).rows
        self.prefixes = sorted({str(r["p"]) for r in rows if r.get("p") and str(r["p"]).isalpha()})
        self.system = self._system()
        self.grammar = self._grammar()

    # -- prompt -----------------------------------------------------------------------------------------
    def slots(self) -> dict[str, str]:
        """Template slots of the forms' worked examples: the graph's words (:func:`plan._slots`), with the
        leaf and region labels, the class values behind two common classes and a room class, and the layers."""
        slots = dict(_slots(self.store))
        leaf, region = self.roles.leaf or "", self.roles.region or ""

        def raw(word: str, label: str) -> str:  # the class value a humanised slot word came from
            found = [c for c in self.classes.get(label, []) if c.replace("_", " ") == word]
            return found[0] if found else word.replace(" ", "_")

        slots.update(
            leaf_label=leaf,
            region_label=region,
            a_val=raw(slots.get("a", ""), leaf),
            b_val=raw(slots.get("b", ""), leaf),
            rcls_val=raw(slots.get("rcls", ""), region),
            layers=", ".join(self.labels),
        )
        return slots

    def _system(self) -> str:
        slots = self.slots()
        examples = [
            f"Q: {item['q']}\nForm: {item['form']}"
            for item in fill_templates(self.words.measure_examples, slots)
            if item["form"] == NONE_FORM or parse_form(item["form"]) is not None
        ]
        intro = self.words.measure_intro.format(layers=slots["layers"])
        return intro + "\n\n" + "\n\n".join(examples)

    @staticmethod
    def user(question: str, links: Sequence[Link] = ()) -> str:
        said = "".join(f"{link.describe()}.\n" for link in links)
        return f"{said}Q: {question}\nForm:"

    # -- grammar ----------------------------------------------------------------------------------------
    def _grammar(self) -> Grammar:
        digits = plus(Chars("0-9"))
        number = seq(digits, opt(seq(".", digits)))
        symbol = seq(one_of(self.prefixes or ["O"]), digits)
        room = alt(NO, one_of(self.rooms)) if self.rooms else NO
        every_class = sorted({c for classes in self.classes.values() for c in classes})
        ref = alt(symbol, one_of(every_class)) if every_class else symbol
        finds = [
            seq(
                f"find: {label}; class: ",
                alt(ANY, one_of(self.classes[label])) if self.classes[label] else ANY,
            )
            for label in self.labels
        ]
        rest = seq(
            "; in: ", room, "; from: ", ref, "; from in: ", room, "; rank: ", one_of(RANKS),
            "; within: ", alt(NO, number), "; answer: ", one_of(ANSWERS),
        )  # fmt: skip
        return (
            Grammar({"root": alt(NONE_FORM, seq(alt(*finds), rest))})
            if finds
            else Grammar({"root": NONE_FORM})
        )

    # -- compiler ---------------------------------------------------------------------------------------
    def compile(self, form: MeasureForm, *, ordered: bool = False) -> str | None:
        """The Cypher query ``form`` asks for (None when it names a layer, class, room or node the graph does
        not have, or measures nothing: no ranking, no bound, no distance asked). ``ordered`` (the answer is a list): a ranking keeps every node in its order, by id or
        class, instead of the first."""
        if form.find not in self.labels:
            return None
        if form.rank == "none" and form.within is None and form.answer != "distance":
            return None  # no distance ranks or bounds anything: every node but one is no answer to a measure
        if form.cls != ANY and form.cls not in self.classes.get(form.find, []):
            return None
        ref = self._reference(form.ref)
        if ref is None:
            return None
        for room in (form.inside, form.ref_inside):
            if room is not None and room not in self.rooms:
                return None
        sym, cls, center = ont.SYMBOL_KEY, ont.CLASS_KEY, ont.CENTER_KEY
        target = f"(x:`{form.find}`{'' if form.cls == ANY else f' {{{cls}: {cypher_string(form.cls)}}}'})"
        contains = f"-[:{ont.CONTAINS}*]->"
        lines = [
            f"MATCH (t {{{sym}: {cypher_string(form.inside)}}}){contains}{target}"
            if form.inside
            else f"MATCH {target}",
            f"MATCH (f {{{sym}: {cypher_string(form.ref_inside)}}}){contains}{ref}"
            if form.ref_inside
            else f"MATCH {ref}",
        ]
        distance = f"point.distance(x.{center}, ref.{center})"
        where = "WHERE x <> ref" + (f" AND {distance} <= {form.within:g}" if form.within is not None else "")
        lines.append(where)
        if form.rank != "none" and form.answer != "count":
            order = "ASC" if form.rank == "nearest" else "DESC"
            if ordered:
                value = f"x.{cls}" if form.answer == "class" else f"x.{sym}"
                lines.append(f"WITH x, min({distance}) AS d ORDER BY d {order}")
                return " ".join([*lines, f"RETURN {value}"])
            lines.append(f"WITH x, min({distance}) AS d ORDER BY d {order} LIMIT 1")
            value = {"id": f"x.{sym}", "class": f"x.{cls}", "distance": "d"}[form.answer]
        else:
            value = {
                "id": f"DISTINCT x.{sym}",
                "class": f"DISTINCT x.{cls}",
                "count": "count(DISTINCT x)",
                "distance": f"min({distance})",
            }[form.answer]
        return " ".join([*lines, f"RETURN {value}"])

    def resolve(self, value: str, prefer: Sequence[str | None] = ()) -> tuple[str, str] | None:
        """What ``value`` names: ``("symbol", value)`` for a node the graph has, ``(label, value)`` for a class
        of a layer with a centre (the ``prefer`` layers first, then the others), None otherwise."""
        if _SYMBOL.fullmatch(value):
            try:
                rows = self.store.query(
                    f"MATCH (n {{{ont.SYMBOL_KEY}: $s}}) RETURN count(n) AS n", {"s": value}, read_only=True
                ).rows
            except SceneRagError:
                return None
            return ("symbol", value) if rows and rows[0].get("n") else None
        first = [label for label in prefer if label in self.labels]
        for label in first + [label for label in self.labels if label not in first]:
            if value in self.classes.get(label, []):
                return (label, value)
        return None

    def _reference(self, ref: str) -> str | None:
        """The node pattern ``ref`` (a symbol, or a class of a layer with a centre) names, or None."""
        named = self.resolve(ref, (self.roles.leaf, self.roles.region))
        if named is None:
            return None
        kind, value = named
        if kind == "symbol":
            return f"(ref {{{ont.SYMBOL_KEY}: {cypher_string(value)}}})"
        return f"(ref:`{kind}` {{{ont.CLASS_KEY}: {cypher_string(value)}}})"
