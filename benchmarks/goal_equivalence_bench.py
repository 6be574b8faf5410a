"""Time ``goals_equivalent`` on random goals with 10/35/70/140 distinct atoms.

For each size: random read-once goals (every atom once, so every atom matters), an equivalent rewrite
(shuffled operands, De Morgan, double negation, some distribution) and a copy with one atom negated
(never equivalent). Prints median and p95 milliseconds for MiniSat (the default), MiniSat after the
presolve (random simulation + normal-form comparison), and the sympy fallback with and without it.

    .venv/bin/python benchmarks/goal_equivalence_bench.py [--instances 15] [--sympy-max-atoms 35]

The rows and the run's conditions go to ``benchmarks/results/goal_equivalence_bench.json`` (``--record``).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from typing import Any

from bench_record import BenchRecord, add_record_argument
from scenerag.lang.pddl_goal import (
    HERACLES_DOMAIN,
    And,
    Atom,
    Goal,
    Not,
    Or,
    goal_atoms,
    goals_equivalent,
    iter_atoms,
)


def make_atoms(n: int) -> list[Atom]:
    unary = [p for p in HERACLES_DOMAIN.predicates if HERACLES_DOMAIN.arity(p) == 1]
    return [Atom(unary[i % len(unary)], (f"O{i}",)) for i in range(n)]


def read_once_goal(rng: random.Random, atoms: list[Atom]) -> Goal:
    if len(atoms) == 1:
        return Not(atoms[0]) if rng.random() < 0.3 else atoms[0]
    k = rng.randint(2, min(4, len(atoms)))
    cuts = sorted(rng.sample(range(1, len(atoms)), k - 1))
    groups = [atoms[i:j] for i, j in zip([0, *cuts], [*cuts, len(atoms)], strict=True)]
    node: Goal = (And if rng.random() < 0.5 else Or)(tuple(read_once_goal(rng, g) for g in groups))
    return Not(node) if rng.random() < 0.2 else node


def negated(goal: Goal) -> Goal:
    return goal.operand if isinstance(goal, Not) else Not(goal)


def equivalent_rewrite(rng: random.Random, goal: Goal) -> Goal:
    if isinstance(goal, Atom):
        return Not(Not(goal)) if rng.random() < 0.1 else goal
    if isinstance(goal, Not):
        inner = goal.operand
        if isinstance(inner, And | Or) and rng.random() < 0.5:
            dual = Or if isinstance(inner, And) else And
            return dual(tuple(equivalent_rewrite(rng, negated(op)) for op in inner.operands))
        return Not(equivalent_rewrite(rng, inner))
    assert isinstance(goal, And | Or)
    operands = [equivalent_rewrite(rng, op) for op in goal.operands]
    rng.shuffle(operands)
    kind, dual = (And, Or) if isinstance(goal, And) else (Or, And)
    splittable = [i for i, op in enumerate(operands) if isinstance(op, dual) and len(op.operands) <= 3]
    target = splittable[0] if splittable else None
    if target is not None and len(operands) == 2 and rng.random() < 0.5:
        other, split = operands[1 - target], operands[target]
        return dual(tuple(kind((other, part)) for part in split.operands))  # type: ignore[union-attr]
    if rng.random() < 0.3:
        return Not(dual(tuple(negated(op) for op in operands)))
    return kind(tuple(operands))


def flip_atom(goal: Goal, atom: Atom) -> Goal:
    if goal == atom:
        return Not(goal)
    if isinstance(goal, Not):
        return Not(flip_atom(goal.operand, atom))
    if isinstance(goal, And | Or):
        return type(goal)(tuple(flip_atom(op, atom) for op in goal.operands))
    return goal


def timed_ms(a: Goal, b: Goal, options: dict[str, Any], expected: bool) -> float:
    start = time.perf_counter()
    result = goals_equivalent(a, b, **options)
    elapsed = (time.perf_counter() - start) * 1000
    if result != expected:
        raise AssertionError(f"goals_equivalent returned {result}, expected {expected}")
    return elapsed


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 35, 70, 140])
    parser.add_argument("--instances", type=int, default=15, help="random goal pairs per size")
    parser.add_argument("--sympy-max-atoms", type=int, default=35, help="skip the sympy fallback above this")
    parser.add_argument("--seed", type=int, default=0)
    add_record_argument(parser)
    args = parser.parse_args()
    record = BenchRecord(args, llm="none")
    rows: list[dict[str, Any]] = []

    goals_equivalent("(holding O1)", "(holding O1)", presolve=False)  # import the SAT solver before timing
    configs: list[tuple[str, dict[str, Any]]] = [
        ("minisat (default)", {"backend": "pysat"}),
        ("minisat + presolve", {"backend": "pysat", "presolve": True}),
        ("sympy + presolve (fallback)", {"backend": "sympy"}),
        ("sympy only", {"backend": "sympy", "presolve": False}),
    ]
    print(
        f"{'atoms':>5} {'method':<27} {'equivalent med/p95 ms':>22} {'not equivalent med/p95 ms':>26}"
        f" {'atom occurrences (rewrite)':>27}"
    )
    for n in args.sizes:
        rng = random.Random(args.seed * 1000 + n)
        pairs = []
        for _ in range(args.instances):
            atoms = make_atoms(n)
            rng.shuffle(atoms)
            goal = read_once_goal(rng, atoms)
            rewritten = equivalent_rewrite(rng, goal)
            assert len(goal_atoms(goal)) == n
            pairs.append((goal, rewritten, flip_atom(goal, rng.choice(atoms))))
        size = statistics.median(sum(1 for _ in iter_atoms(r)) for _, r, _ in pairs)
        for name, options in configs:
            if options.get("backend") == "sympy" and n > args.sympy_max_atoms:
                print(f"{n:>5} {name:<27} {'skipped (--sympy-max-atoms)':>49}")
                rows.append({"atoms": n, "method": name, "skipped": True})
                continue
            eq = [timed_ms(g, r, options, True) for g, r, _ in pairs]
            ne = [timed_ms(f, r, options, False) for _, r, f in pairs]
            print(
                f"{n:>5} {name:<27} {statistics.median(eq):>12.2f} / {p95(eq):>7.2f}"
                f" {statistics.median(ne):>15.2f} / {p95(ne):>7.2f} {size:>27.0f}"
            )
            rows.append(
                {
                    "atoms": n,
                    "method": name,
                    "equivalent_ms": [statistics.median(eq), p95(eq)],
                    "not_equivalent_ms": [statistics.median(ne), p95(ne)],
                    "atom_occurrences_rewrite": size,
                }
            )
    record.results["rows"] = rows
    record.write()


if __name__ == "__main__":
    main()
