"""A Cypher grammar built from the live schema: what a local model may write, token by token.

The grammar is deliberately shallow — a stream of words, strings, patterns and punctuation, not a full
Cypher parser — and strict exactly where a small model invents things:

* node labels (``(o:Object)``) and relationship types are the schema's;
* a relationship between two labelled nodes goes a way the graph has (``(:Room)-[:CONTAINS]->(:Object)``
  is allowed because rooms hold objects through places — the missing ``*`` is repaired afterwards —
  but ``(:Object)-[:CONTAINS]->(:Room)`` is not);
* property keys after ``.`` and inside a node's ``{...}`` are keys the schema has (in ``{}``: keys of that
  node's label);
* every string literal is a value the graph holds (classes, symbols, names, labels, relationship types),
  a class of its labelspace, or a word of the question (so "how many doors?" can still be asked of a graph
  without doors and answered 0).

The query starts with a clause keyword and is one line. :func:`cypher_grammar` returns a
:class:`~scenerag.lang.gbnf.Grammar`; its ``accepts`` checks a query (tests hold every reference query of
the question sets to it).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from scenerag.graph import ontology as ont
from scenerag.lang.gbnf import Chars, Grammar, Node, Ref, alt, one_of, opt, plus, seq, star
from scenerag.store.schema import GraphSchema

__all__ = ["CypherVocabulary", "cypher_grammar", "question_strings"]

#: functions whose names hold a dot (the grammar allows ``.`` elsewhere only before a property key)
DOTTED_FUNCTIONS = (
    "point.distance",
    "point.withinBBox",
    "db.labels",
    "db.relationshipTypes",
    "db.propertyKeys",
)
#: components of a point value (``n.center.z``)
POINT_FIELDS = ("x", "y", "z")
_CLAUSES = ("MATCH", "OPTIONAL MATCH", "WITH", "UNWIND", "CALL", "RETURN")
_PUNCT = (
    "(",
    ")",
    "[",
    "]",
    ",",
    "+",
    "-",
    "*",
    "/",
    "%",
    "=",
    "<>",
    "<=",
    ">=",
    "<",
    ">",
    "|",
    "^",
    "{",
    "}",
    "..",  # a list slice: nodes(p)[1..-1]
)


@dataclass(frozen=True)
class CypherVocabulary:
    """What the grammar allows beyond the schema's names: the string values a query may compare with."""

    strings: frozenset[str]


def question_strings(question: str) -> set[str]:
    """Words of ``question`` a query may use as string values: each word as written and lower-cased, singular
    forms and adjacent pairs (joined by a space and by ``_``) — a thing the graph does not hold can still be
    asked for and found absent ("R1" in a graph without R1, "doors" in one without doors)."""
    words = re.findall(r"[A-Za-z][A-Za-z0-9_-]*", question)
    out: set[str] = set(words)
    lowered = [w.lower() for w in words]
    for w in lowered:
        out.add(w)
        if len(w) > 3 and w.endswith("s"):
            out.add(w[:-1])
            if w.endswith("es"):
                out.add(w[:-2])
    for a, b in itertools.pairwise(lowered):
        out.update({f"{a} {b}", f"{a}_{b}"})
    return out


def _case_insensitive(word: str) -> Node:
    parts: list[Node | str] = []
    for ch in word:
        parts.append(Chars(f"{ch.upper()}{ch.lower()}") if ch.isalpha() else ch)
    return seq(*parts)


def _quoted(value: Node) -> Node:
    return alt(seq("'", value, "'"), seq('"', value, '"'))


def _rule(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "x"


def _classes_by_label(schema: GraphSchema, labels: Sequence[str]) -> dict[str, set[str]]:
    """Each label's class values, as the schema lists them (empty where it lists none)."""
    out: dict[str, set[str]] = {}
    for label in labels:
        info = schema.node_properties.get(label, {}).get(ont.CLASS_KEY)
        out[label] = set(info.values or ()) if info is not None else set()
    return out


def cypher_grammar(schema: GraphSchema, strings: Iterable[str], *, symbol_pattern: bool = False) -> Grammar:
    """The grammar of read queries over ``schema`` whose string literals are among ``strings`` (and, with
    ``symbol_pattern``, any node symbol: a letter and digits, for graphs with too many to list)."""
    labels = sorted(schema.node_counts)
    types = sorted(schema.rel_counts)
    if not labels:
        raise ValueError("the schema has no labels: load a graph before building its grammar")
    node_keys = {label: sorted(schema.node_properties.get(label, {})) for label in labels}
    all_keys = sorted(
        {k for keys in node_keys.values() for k in keys}
        | {k for props in schema.rel_properties.values() for k in props}
        | set(POINT_FIELDS)
    )
    values = sorted({s for s in strings if s and "'" not in s and "\n" not in s} | set(labels) | set(types))
    label_rule = {label: f"node-{_rule(label)}" for label in labels}
    after_rule = {label: f"after-{_rule(label)}" for label in labels}

    rules: dict[str, Node] = {}
    sp = Ref("sp")
    rules["sp"] = plus(Chars(" "))
    rules["ident"] = seq(Chars("A-Za-z_"), star(Chars("A-Za-z0-9_")))
    rules["number"] = seq(plus(Chars("0-9")), opt(seq(".", plus(Chars("0-9")))))
    rules["key"] = one_of(all_keys)
    rules["prop"] = seq(Ref("ident"), plus(seq(".", Ref("key"))))
    rules["word"] = alt(
        Ref("ident"),
        Ref("number"),
        Ref("prop"),
        one_of(DOTTED_FUNCTIONS),
        # a label test (WHERE n:Room), only after a condition keyword: "(o:Object {...})" is a pattern
        seq(
            alt(*(_case_insensitive(k) for k in ("WHERE", "AND", "OR", "NOT"))),
            sp,
            Ref("ident"),
            opt(sp),
            ":",
            opt(sp),
            Ref("label"),
        ),
    )
    listed = [one_of(values)] if values else []
    pattern = [seq(Chars("A-Za-z"), plus(Chars("0-9")))] if symbol_pattern or not values else []
    rules["value"] = alt(*listed, *pattern)
    rules["string"] = _quoted(Ref("value"))
    # a node's symbol in its pattern ({nodeSymbol: '…'}) is one of the symbols (or symbol-shaped)
    symbols = sorted(v for v in values if ont.has_symbol_shape(v))
    symbol_values = ([one_of(symbols)] if symbols else []) + pattern
    if symbol_values:
        rules["symbol-string"] = _quoted(alt(*symbol_values))
    rules["punct"] = one_of(_PUNCT)
    # map literals: a key, then ':' (only after '{' or ',', so "(o:Light" cannot pass as a map)
    rules["map-key"] = alt(
        seq("{", opt(sp), Ref("ident"), opt(sp), ":"), seq(",", opt(sp), Ref("ident"), opt(sp), ":")
    )
    rules["nonword"] = alt(Ref("string"), Ref("path"), Ref("map-key"), Ref("punct"))
    rules["tail"] = star(alt(seq(sp, Ref("word")), seq(opt(sp), Ref("nonword"), opt(Ref("word")))))
    rules["root"] = seq(
        opt(sp), alt(*(_case_insensitive(c) for c in _CLAUSES)), Ref("tail"), opt(sp), opt(";")
    )

    # -- patterns: nodes of each label, and the hops a label allows --------------------------------------
    rules["hops"] = seq("*", opt(plus(Chars("0-9"))), opt(seq("..", opt(plus(Chars("0-9"))))))
    rules["pvalue"] = alt(Ref("string"), Ref("number"), Ref("prop"), Ref("ident"))
    symbol_pvalue = alt(Ref("symbol-string"), Ref("prop"), Ref("ident")) if symbol_values else Ref("pvalue")
    classes = _classes_by_label(schema, labels)
    for label in labels:
        keys = node_keys[label] or [ont.SYMBOL_KEY]
        others = [k for k in keys if k not in (ont.SYMBOL_KEY, ont.CLASS_KEY)]
        # a node's class in its pattern is never a class only another label holds ({class: 'bicycle'} on a
        # mesh place matches nothing); words the graph holds as no class stay (a class found absent)
        foreign = set().union(*(c for m, c in classes.items() if m != label)) - classes[label]
        own = [v for v in values if v not in foreign]
        class_kv: list[Node] = []
        if ont.CLASS_KEY in keys:
            class_value = (
                alt(_quoted(one_of(own)), Ref("number"), Ref("prop"), Ref("ident")) if own else Ref("pvalue")
            )
            class_kv = [seq(ont.CLASS_KEY, opt(sp), ":", opt(sp), class_value)]
        kv = alt(
            *class_kv,
            *([seq(one_of(others), opt(sp), ":", opt(sp), Ref("pvalue"))] if others else []),
            *([seq(ont.SYMBOL_KEY, opt(sp), ":", opt(sp), symbol_pvalue)] if ont.SYMBOL_KEY in keys else []),
        )
        props = seq("{", opt(sp), kv, star(seq(opt(sp), ",", opt(sp), kv)), opt(sp), "}")
        rules[label_rule[label]] = seq(
            "(", opt(sp), opt(Ref("ident")), opt(sp), ":", opt(sp), label, opt(sp), opt(props), opt(sp), ")"
        )
    any_kv = seq(Ref("key"), opt(sp), ":", opt(sp), Ref("pvalue"))
    any_props = seq("{", opt(sp), any_kv, star(seq(opt(sp), ",", opt(sp), any_kv)), opt(sp), "}")
    rules["label"] = one_of(labels)
    # a node without a label (one label per node in a scene graph: ":A:B" never matches, so it is not offered)
    rules["node-any"] = seq("(", opt(sp), opt(Ref("ident")), opt(sp), opt(any_props), opt(sp), ")")
    rules["rel-type"] = one_of(types) if types else Ref("ident")
    rules["rel-any"] = _rel(Ref("rel-type"), Ref("rel-type"), Ref("rel-type"), untyped=True)
    rules["node-next"] = alt(
        seq(Ref("node-any"), Ref("after-any")),
        *(seq(Ref(label_rule[m]), Ref(after_rule[m])) for m in labels),
    )
    rules["after-any"] = opt(seq(opt(sp), Ref("rel-any"), opt(sp), Ref("node-next")))

    out, into = _reach(schema, labels)
    for label in labels:
        hops: list[Node] = []
        for m in labels:
            rel = _rel_between(out, into, label, m)
            if rel is not None:
                hops.append(seq(rel, opt(sp), Ref(label_rule[m]), Ref(after_rule[m])))
        any_rel = _rel_between(out, into, label, None)
        if any_rel is not None:
            hops.append(seq(any_rel, opt(sp), Ref("node-any"), Ref("after-any")))
        hops.append(seq(_untyped(), opt(sp), Ref("node-next")))
        rules[after_rule[label]] = opt(seq(opt(sp), alt(*hops)))
    rules["path"] = alt(
        seq(Ref("node-any"), Ref("after-any")),
        *(seq(Ref(label_rule[m]), Ref(after_rule[m])) for m in labels),
    )
    return Grammar(rules)


def _reach(
    schema: GraphSchema, labels: list[str]
) -> tuple[dict[str, set[tuple[str, str]]], dict[str, set[tuple[str, str]]]]:
    """``out[L]``: (type, M) a relationship of that type can lead from an L node to an M node (directly, or
    through a chain of ``CONTAINS``); ``into[L]``: (type, M) for relationships from M to L."""
    out: dict[str, set[tuple[str, str]]] = {label: set() for label in labels}
    into: dict[str, set[tuple[str, str]]] = {label: set() for label in labels}
    contains: dict[str, set[str]] = {label: set() for label in labels}
    for a, t, b in schema.patterns:
        if a in out and b in out:
            out[a].add((t, b))
            into[b].add((t, a))
            if t == ont.CONTAINS:
                contains[a].add(b)
    for label in labels:  # a container reaches what its children hold
        seen, todo = set(), list(contains[label])
        while todo:
            m = todo.pop()
            if m in seen:
                continue
            seen.add(m)
            todo.extend(contains.get(m, ()))
        for m in seen:
            out[label].add((ont.CONTAINS, m))
            into[m].add((ont.CONTAINS, label))
    return out, into


def _rel_between(
    out: dict[str, set[tuple[str, str]]], into: dict[str, set[tuple[str, str]]], a: str, b: str | None
) -> Node | None:
    """The typed relationships that may join an ``a`` node to a ``b`` node (``b`` None: any node), in the
    directions the graph has them; None when there is none."""
    fwd = sorted({t for t, m in out[a] if b is None or m == b})
    back = sorted({t for t, m in into[a] if b is None or m == b})
    both = sorted(set(fwd) | set(back))
    if not both:
        return None
    return _rel(
        one_of(fwd) if fwd else None,
        one_of(back) if back else None,
        one_of(both),
        untyped=False,
    )


def _rel(fwd: Node | None, back: Node | None, both: Node, *, untyped: bool) -> Node:
    sp = Ref("sp")

    def body(types: Node) -> Node:
        more = star(seq(opt(sp), "|", opt(sp), opt(":"), opt(sp), types))
        return seq(
            "[",
            opt(sp),
            opt(Ref("ident")),
            opt(sp),
            ":",
            opt(sp),
            types,
            more,
            opt(sp),
            opt(Ref("hops")),
            opt(sp),
            "]",
        )

    forms: list[Node] = [seq("-", body(both), "-")]
    if fwd is not None:
        forms.append(seq("-", body(fwd), "->"))
    if back is not None:
        forms.append(seq("<-", body(back), "-"))
    if untyped:
        forms.append(_untyped())
    return alt(*forms)


def _untyped() -> Node:
    sp = Ref("sp")
    inner = seq("[", opt(sp), opt(Ref("ident")), opt(sp), opt(Ref("hops")), opt(sp), "]")
    return alt("--", "-->", "<--", seq("-", inner, "-"), seq("-", inner, "->"), seq("<-", inner, "-"))
