"""Prompt text for the scene-graph agents (the Heracles prompts in spirit, kept short: tokens cost).

Everything graph-specific (labels, relationship types, containment chains, examples) is generated from
the live database schema, never hand-written, so the same prompts work on any scene graph.
"""

from __future__ import annotations

from scenerag.graph import ontology as ont
from scenerag.store.schema import GraphSchema

SCENE_GRAPH_PRIMER = (
    "A 3D scene graph is a layered graph of a robot's world: rooms/regions on top, places below them, "
    "objects below places. Symbols look like R1 (room), P12 (place), O7 (object). Kinds of things (chair, "
    "kitchen) are values of the class property, not labels."
)

CYPHER_RULES = (
    "Cypher: Neo4j dialect, read-only (MATCH, WHERE, WITH, UNWIND, RETURN), point.distance() for distances, "
    "no apoc; return only the columns you need; count(), collect() or LIMIT for large results."
)

ANSWER_RULES_QA = (
    "Final answer format (SLDP): a set as <O3, O7> (any order), an ordered list as [O3, O7], a mapping as "
    "{chair: 3, table: 1}, a position as POINT(1.0 2.5 0.3), a single number (4) or symbol (R2) as itself. "
    "Unless asked otherwise give node symbols, without quotes. The answer holds only the value: no words."
)

SLDP_TYPE_HINTS = {  # no copyable placeholders: small models repeat "<a, b, c>" verbatim
    "set": "The answer is a set: the items you found, comma-separated between < and >.",
    "list": "The answer is an ordered list: the items you found, in order, comma-separated between [ and ].",
    "dict": "The answer is a mapping: the keys and values you found, as {key: value, ...} with real keys.",
    "point": "The answer is a position: POINT followed by the three coordinates you found in parentheses.",
    "number": "The answer is a single number.",
    "string": "The answer is a single symbol or word.",
}


def pddl_rules(domain_text: str) -> str:
    """Instructions for grounding an instruction to a PDDL goal over ``domain_text``'s predicates."""
    return (
        "Task: turn the instruction into a PDDL goal over these predicates, using node symbols from the "
        "database as arguments:\n"
        f"{domain_text}\n"
        "Compose with (and ...), (or ...), (not ...). For ordered instructions use visited-* for the earlier "
        "steps and at-*/in-room for the final one. The final answer is only the goal, e.g. "
        "(and (visited-object O3) (at-place P12))."
    )


def schema_block(schema: GraphSchema) -> str:
    """The live database schema rendered for the prompt."""
    return "Database schema:\n" + schema.to_text(compact=True)


def no_schema_block() -> str:
    """What the model is told when it gets no schema: explore first."""
    return (
        "You are not given the database schema: explore it with queries first, e.g. "
        "CALL db.labels() YIELD label RETURN label; "
        "MATCH (a)-[r]->(b) RETURN DISTINCT labels(a), type(r), labels(b) LIMIT 20; "
        "MATCH (n:SomeLabel) RETURN keys(n) LIMIT 1."
    )


def _chain_for_examples(schema: GraphSchema) -> tuple[str, str, str | None]:
    """(top container label, leaf label, a sibling edge type) for generated examples."""
    chains = schema.containment_chains()
    labels = set(schema.node_counts)
    leaf = (
        ont.OBJECT
        if ont.OBJECT in labels
        else (chains[0][-1] if chains else next(iter(sorted(labels)), "Node"))
    )
    top = ont.ROOM if ont.ROOM in labels else (chains[0][0] if chains else leaf)
    for chain in chains:
        if leaf in chain and chain.index(leaf) > 1:
            top = chain[0]
            break
    sibling = next(
        (t for (_, t, _) in sorted(schema.patterns) if t.endswith("_CONNECTED") and t != ont.ROOM_CONNECTED),
        None,
    )
    return top, leaf, sibling


def _first_value(schema: GraphSchema, label: str, key: str = "class") -> str | None:
    info = schema.node_properties.get(label, {}).get(key)
    return info.values[0] if info is not None and info.values else None


def cypher_examples(schema: GraphSchema) -> str:
    """Worked query examples built from the live schema (labels, edge types and class values that exist).

    Small models miss transitive containment (``-[:CONTAINS*]->``) zero-shot and take classes for labels;
    with these they write both right.
    """
    top, leaf, sibling = _chain_for_examples(schema)
    top_cls = _first_value(schema, top)
    leaf_cls = _first_value(schema, leaf) or "chair"
    leaf_symbol = f"{leaf[0]}3"
    where_top = f"{{class: '{top_cls}'}}" if top_cls else f"{{nodeSymbol: '{top[0]}1'}}"
    top_words = f"the {top_cls} {top.lower()}s" if top_cls else f"{top[0]}1"
    lines = [
        "Examples:",
        f"Q: Which {leaf_cls} objects are in {top_words}? -> MATCH (r:{top} {where_top})"
        f"-[:CONTAINS*]->(o:{leaf} {{class: '{leaf_cls}'}}) RETURN DISTINCT o.nodeSymbol",
        f"Q: How many {leaf.lower()}s are within 3 m of {leaf_symbol}? -> MATCH (a:{leaf} "
        f"{{nodeSymbol: '{leaf_symbol}'}}), (b:{leaf}) WHERE b <> a AND "
        "point.distance(a.center, b.center) < 3 RETURN count(b)",
    ]
    if sibling:
        src = next((s for (s, t, _) in schema.patterns if t == sibling), leaf)
        lines.append(
            f"Q: Which nodes are within 2 hops of {src[0]}5? -> MATCH (p:{src} {{nodeSymbol: '{src[0]}5'}})"
            f"-[:{sibling}*1..2]-(q:{src}) WHERE q <> p RETURN DISTINCT q.nodeSymbol"
        )
    return "\n".join(lines)
