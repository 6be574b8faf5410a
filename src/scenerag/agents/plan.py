"""Typed multi-step plans: the model says whether a question is one step, or writes numbered steps whose
later ones refer to the first one's answer as ``#1`` (QDMR-style).

Nothing here reads a sentence's shape. The model decides, shown worked plans instantiated with the graph's
own layers, classes and symbols (templates of the language's words file), and its reply is decoded under a
grammar (``one step`` | ``1. <question>? 2. <question with #1>?`` [``3. ...``]; a step ends at ``?`` or
``.``), so it always parses.
Each step is answered by the whole Cypher pipeline; the node symbols of one step fill the next.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from scenerag.agents.examples import GraphRoles, _plural
from scenerag.agents.words import Words, fill_templates
from scenerag.graph import ontology as ont
from scenerag.lang.gbnf import Chars, Grammar, Ref, alt, opt, plus, seq, star
from scenerag.store.base import GraphStore

__all__ = ["PLAN_GRAMMAR", "Plan", "Planner", "parse_plan", "plan_problem"]

ONE_STEP = "one step"


def _plan_grammar() -> Grammar:
    # a step ends at "?", "." or ":" (a "." inside a number goes on), so the next step's number cannot hide
    # in it ("... in: 2. Which ..."); a number is followed by another character, not by a number
    digits = plus(Chars("0-9"))
    other = Chars("^#?.:\\n0-9")
    text = alt(other, seq(Ref("number"), other))
    end = seq(opt(Ref("number")), Chars("?.:"))
    return Grammar(
        {
            "root": alt(ONE_STEP, seq("1. ", Ref("step"), " 2. ", Ref("ref"), opt(seq(" 3. ", Ref("ref"))))),
            "step": seq(plus(text), end),
            "ref": seq(star(text), "#", Chars("12"), star(text), end),
            "number": seq(digits, opt(seq(".", digits))),
        }
    )


PLAN_GRAMMAR = _plan_grammar()


@dataclass(frozen=True)
class Plan:
    """Steps of a question; each later step names an earlier one's answer as ``#1`` / ``#2``."""

    steps: tuple[str, ...]

    @property
    def single(self) -> bool:
        return len(self.steps) < 2


def parse_plan(reply: str) -> Plan | None:
    """The plan in a reply (``one step`` -> a single step; None when the reply is neither form, e.g. from a
    model that ignores the grammar)."""
    text = " ".join(reply.split())
    if text.lower().rstrip(".").strip() == ONE_STEP:
        return Plan(())
    parts = re.split(r"(?:^|\s)([123])\.\s+", text)
    steps: list[str] = []
    for i in range(1, len(parts) - 1, 2):
        if parts[i] != str(len(steps) + 1):
            return None
        steps.append(parts[i + 1].strip())
    if len(steps) < 2 or any(not s for s in steps) or "#" in steps[0]:
        return None
    if not all(re.search(r"#[12]\b", s) for s in steps[1:]):
        return None
    return Plan(tuple(steps))


class Planner:
    """The planning prompt of one graph: the language's instructions and worked plans with the graph's own
    words (built once; static, so a local model keeps its KV state)."""

    def __init__(self, store: GraphStore, words: Words) -> None:
        self.words = words
        self.system = self._system(store)

    def _system(self, store: GraphStore) -> str:
        slots = _slots(store)
        examples = [
            f"Q: {item['q']}\nPlan: {item['plan']}"
            for item in fill_templates(self.words.plan_examples, slots)
        ]
        return self.words.plan_intro + "\n\n" + "\n\n".join(examples)

    @staticmethod
    def user(question: str) -> str:
        return f"Q: {question}\nPlan:"

    def fill(self, step: str, answers: Sequence[Sequence[str]]) -> str:
        """``step`` with ``#1``/``#2`` replaced by the symbols those steps answered."""
        out = step
        for i, symbols in enumerate(answers, 1):
            out = out.replace(f"#{i}", self.words.join(list(symbols)) if symbols else f"#{i}")
        return out


def _slots(store: GraphStore) -> dict[str, str]:
    """Template slots from the graph: layer words, two common classes, symbols."""
    schema = store.schema()
    roles = GraphRoles.from_schema(schema)

    def word(label: str | None, default: str) -> str:
        return ont.layer_name(label).replace("_", " ") if label else default

    leaf, region, place = word(roles.leaf, "object"), word(roles.region, "room"), word(roles.place, "place")
    classes: list[str] = []
    syms: list[str] = []
    if roles.leaf:
        rows = store.query(
            f"MATCH (o:`{roles.leaf}`) WHERE o.class IS NOT NULL "
            "RETURN o.class AS c, count(*) AS n, collect(o.nodeSymbol)[0] AS s ORDER BY n DESC, c",
            max_rows=50,
        ).rows
        classes = [str(r["c"]).replace("_", " ") for r in rows]
        syms = [str(r["s"]) for r in rows if r.get("s")]
    rsyms: list[str] = []
    rclasses: list[str] = []
    if roles.region:
        rows = store.query(
            f"MATCH (r:`{roles.region}`) RETURN r.nodeSymbol AS s, r.class AS c ORDER BY s", max_rows=50
        ).rows
        rsyms = [str(r["s"]) for r in rows if r.get("s")]
        rclasses = [str(r["c"]).replace("_", " ") for r in rows if r.get("c")]
    a = classes[0] if classes else "chair"
    b = classes[1] if len(classes) > 1 else a
    out = {
        "leaf": leaf,
        "leaf_pl": _plural(leaf),
        "region": region,
        "region_pl": _plural(region),
        "place": place,
        "a": a,
        "a_pl": _plural(a),
        "b": b,
        "b_pl": _plural(b),
        "sym": syms[-1] if syms else "O1",
        "sym2": syms[-2] if len(syms) > 1 else (syms[0] if syms else "O2"),
        "rsym": rsyms[-1] if rsyms else "R1",
        "rcls": rclasses[0] if rclasses else region,
    }
    if not roles.place:
        out.pop("place")
    return out


def _shape(text: str) -> list[str]:
    """The words of ``text`` with node symbols and step references made alike (lower-case)."""
    text = re.sub(r"#\d\b|\b[A-Za-z]{1,2}\d+\b", " # ", text.lower())
    return re.findall(r"[a-z]+|#", text)


def plan_problem(plan: Plan, question: str) -> str | None:
    """Why ``plan`` is no decomposition of ``question`` (None when it is one): the first step is the question
    itself (nearly all its words), or a later step asks what the first one asks, of another node."""
    first = set(_shape(plan.steps[0]))
    asked = set(_shape(question))
    if first and len(first & asked) / len(first | asked) >= 0.8:
        return "the first step is the question itself"
    for later in plan.steps[1:]:
        if _shape(later) == _shape(plan.steps[0]):
            return "a later step asks what the first one asks"
    return None
