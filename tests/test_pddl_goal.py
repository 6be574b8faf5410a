"""PDDL goals: parsing and errors, the Heracles domain checks, SAT-based equivalence (incl. 70+ atoms)."""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scenerag.errors import SceneRagError
from scenerag.lang import (
    HERACLES_DOMAIN,
    And,
    Atom,
    Constant,
    Goal,
    GoalParseError,
    Imply,
    Not,
    Or,
    check_goal,
    evaluate_goal,
    format_goal,
    goal_atoms,
    goal_counterexample,
    goal_symbols,
    goals_equivalent,
    parse_goal,
    simplify_goal,
    symbol_labels,
)
from scenerag.lang.pddl_goal import negation_normal_form

# ---------------------------------------------------------------------------------------------------
# Parsing


def test_parse_structure_and_case_insensitive_names() -> None:
    goal = parse_goal("(:goal (AND (Visited-Place P1) (or (holding O19) (NOT (safe O2)))))")
    assert goal == And(
        (
            Atom("visited-place", ("P1",)),
            Or((Atom("holding", ("O19",)), Not(Atom("safe", ("O2",))))),
        )
    )
    assert parse_goal("(visited-place P1)") == parse_goal("(:GOAL (visited-place P1))")


def test_parse_constants_variables_imply_empty_and_comments() -> None:
    assert parse_goal("true") == Constant(True)
    assert parse_goal("(and)") == And(())
    assert parse_goal("(or ?a ?b)") == Or((Atom("?a"), Atom("?b")))
    holding, safe = Atom("holding", ("O1",)), Atom("safe", ("O1",))
    assert parse_goal("(imply (holding O1) (safe O1))") == Imply(holding, safe)
    assert parse_goal("; the goal\n(and (at-place P1) ; final place\n)") == And((Atom("at-place", ("P1",)),))


@pytest.mark.parametrize(
    ("text", "position", "needle"),
    [
        ("(and (visited-place P1)", 0, "never closed"),
        ("(and (visited-place P1) (or (holding O1)", 24, "2 '(' never closed"),
        ("(and (visited-place P1)))", 24, "unmatched ')'"),
        ("(xor (holding O1) (holding O2))", 1, "unknown connective 'xor'"),
        ("(exists (?p) (visited-place ?p))", 1, "'exists' is not supported"),
        ("visited-place P1", 0, "expected '('"),
        ("P1", 0, "expected '('"),
        ("(holding O1) (holding O2)", 13, "one expression"),
        ("()", 0, "empty '()'"),
        ("((holding O1))", 1, "expected a connective or a predicate name"),
        ("(not (holding O1) (holding O2))", 0, "exactly one"),
        ("(imply (holding O1))", 0, "exactly two"),
        ("(and (:goal (holding O1)))", 5, "may only wrap the whole goal"),
        ("(holding (O1))", 9, "must be symbols"),
        ("(1abc O1)", 1, "invalid predicate name"),
        ("", 0, "empty goal"),
    ],
)
def test_parse_errors(text: str, position: int, needle: str) -> None:
    with pytest.raises(GoalParseError) as info:
        parse_goal(text)
    assert isinstance(info.value, SceneRagError)
    assert info.value.position == position
    assert needle in info.value.reason
    assert info.value.excerpt.splitlines()[1].endswith("^")


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("(visited-place P1 P2)", "visited-place takes 1 argument (visited-place ?p - place), found 2"),
        ("(object-in-place O1)", "object-in-place takes 2 arguments"),
        ("(visit-place P1)", "did you mean visited-place"),
        ("(safe)", "safe takes 1 argument (safe ?o - object)"),
    ],
)
def test_domain_errors_when_parsing_with_a_domain(text: str, needle: str) -> None:
    parse_goal(text)  # fine without a domain
    with pytest.raises(GoalParseError, match=None) as info:
        parse_goal(text, HERACLES_DOMAIN)
    assert needle in info.value.reason


def test_atoms_built_in_code_are_validated() -> None:
    with pytest.raises(SceneRagError, match="invalid symbols"):
        Atom("holding", ("O 1",))
    with pytest.raises(SceneRagError, match="invalid goal predicate"):
        Atom("hold(ing", ("O1",))
    assert format_goal(Atom("Holding", ("O1",))) == "(holding O1)"


def test_deep_nesting_is_an_error_not_a_crash() -> None:
    with pytest.raises(GoalParseError, match="nested more than"):
        parse_goal("(not " * 2000 + "(holding O1)" + ")" * 2000)


def test_format_goal_round_trip_and_canonical_order() -> None:
    text = "(AND   (or (holding O2) (holding O1))\n (not (safe O3)) (imply (holding O1) true))"
    goal = parse_goal(text)
    assert format_goal(goal) == (
        "(and (or (holding O2) (holding O1)) (not (safe O3)) (imply (holding O1) true))"
    )
    assert parse_goal(format_goal(goal)) == goal
    a = format_goal("(and (holding O2) (holding O1) (holding O2))", sort_operands=True)
    assert a == format_goal("(and (holding O1) (holding O2))", sort_operands=True)


def test_goal_symbols_and_atoms() -> None:
    goal = (
        "(or (holding O19) (and (visited-room R2) (not (visited-room R1)) (object-in-place O19 P3))"
        " (safe ?x))"
    )
    assert goal_symbols(goal) == {"O19", "R2", "R1", "P3"}
    assert [format_goal(a) for a in goal_atoms("(and (holding O1) (HOLDING o1) (safe O1))")] == [
        "(holding O1)",
        "(safe O1)",
    ]


# ---------------------------------------------------------------------------------------------------
# Domain checks


def test_heracles_domain() -> None:
    assert HERACLES_DOMAIN.arity("safe") == 1
    assert HERACLES_DOMAIN.arity("object-in-place") == 2
    assert HERACLES_DOMAIN.arity("Visited-Room") == 1
    assert HERACLES_DOMAIN.arity("teleport") is None
    assert [k.name for k in HERACLES_DOMAIN.parameter_kinds("object-in-place")] == ["object", "place"]
    assert HERACLES_DOMAIN.kinds["place"].labels == ("Place", "MeshPlace")
    assert HERACLES_DOMAIN.kind_of_label("MeshPlace").name == "place"  # type: ignore[union-attr]
    text = HERACLES_DOMAIN.describe()
    for predicate in (
        "visited-place",
        "at-place",
        "visited-object",
        "at-object",
        "safe",
        "visited-room",
        "in-room",
        "holding",
        "object-in-place",
    ):
        assert f"({predicate} ?" in text


SYMBOLS = {"O1": "Object", "O12": "Object", "P3": "Place", "p4": "MeshPlace", "R1": "Room"}


def test_check_goal_accepts_a_good_goal() -> None:
    goal = "(and (visited-place P3) (at-place p4) (object-in-place O12 P3) (not (in-room R1)) (safe O1))"
    assert check_goal(goal, HERACLES_DOMAIN, SYMBOLS) == []
    assert check_goal(goal) == []


@pytest.mark.parametrize(
    ("goal", "code", "needle"),
    [
        ("(visit-place P3)", "unknown_predicate", "did you mean visited-place"),
        ("(at-place P3 P3)", "wrong_arity", "at-place takes 1 argument"),
        ("(holding O99)", "unknown_symbol", "no node 'O99'"),
        ("(holding o12)", "unknown_symbol", "spells it 'O12'"),
        ("(visited-place R1)", "wrong_symbol_kind", "R1 is a Room, but visited-place needs a place"),
        ("(visited-place R1)", "wrong_symbol_kind", "did you mean (visited-room R1)?"),
        ("(object-in-place P3 O1)", "wrong_symbol_kind", "P3 is a Place, but object-in-place needs an"),
        ("(safe ?o)", "variable", "?o is a variable"),
        ("(or ?a (safe O1))", "variable", "?a is a variable, not a goal"),
        ("(and (holding O1)", "syntax", "never closed"),
    ],
)
def test_check_goal_problems(goal: str, code: str, needle: str) -> None:
    problems = check_goal(goal, HERACLES_DOMAIN, SYMBOLS)
    assert any(p.code == code and needle in str(p) for p in problems), [str(p) for p in problems]


def test_check_goal_against_a_scene_graph() -> None:
    from scenerag import SceneGraph

    graph = SceneGraph()
    graph.add("R1", "Room", "kitchen", (0.0, 0.0, 0.0))
    graph.add("p4", "Place", "place", (1.0, 0.0, 0.0))
    graph.add("O7", "Object", "mug", (1.0, 0.5, 0.8))
    labels = symbol_labels(graph)
    assert labels == {"R1": "Room", "p4": "Place", "O7": "Object"}
    assert check_goal("(and (object-in-place O7 p4) (in-room R1))", HERACLES_DOMAIN, labels) == []
    problems = check_goal("(object-in-place O7 R1)", HERACLES_DOMAIN, labels)
    assert [p.code for p in problems] == ["wrong_symbol_kind"]


def test_check_goal_without_known_symbols_uses_symbol_letters() -> None:
    problems = check_goal("(and (visited-place R1) (holding O1) (visited-place p7) (in-room P2))")
    messages = [str(p) for p in problems]
    assert len(problems) == 2
    assert "'R1' does not look like a place" in messages[0]
    assert "'P2' does not look like a room" in messages[1]


def test_check_goal_reports_each_problem_once_with_position() -> None:
    text = "(and (holding O99) (or (holding O99) (safe O1)))"
    problems = check_goal(text, HERACLES_DOMAIN, SYMBOLS)
    assert len(problems) == 1
    assert text[problems[0].position :].startswith("(holding O99)")


# ---------------------------------------------------------------------------------------------------
# Equivalence: hand-written cases

EQUIVALENT = [
    ("(visited-place P1)", "(VISITED-PLACE p1)"),
    ("(and (holding O1) (holding O2))", "(and (holding O2) (holding O1))"),
    ("(or (holding O1) (and (holding O1) (safe O2)))", "(holding O1)"),  # absorption
    ("(and (holding O1) (or (holding O1) (safe O2)))", "(holding O1)"),
    (
        "(and (at-place P1) (or (holding O1) (holding O2)))",
        "(or (and (at-place P1) (holding O1)) (and (holding O2) (at-place P1)))",
    ),  # distributivity
    (
        "(or (at-place P1) (and (holding O1) (holding O2)))",
        "(and (or (at-place P1) (holding O1)) (or (holding O2) (at-place P1)))",
    ),
    ("(not (not (safe O1)))", "(safe O1)"),
    ("(not (and (holding O1) (holding O2)))", "(or (not (holding O1)) (not (holding O2)))"),  # De Morgan
    ("(not (or (holding O1) (holding O2)))", "(and (not (holding O1)) (not (holding O2)))"),
    ("(or (and (safe O1) (holding O2)) (and (safe O1) (not (holding O2))))", "(safe O1)"),
    ("(imply (holding O1) (safe O1))", "(or (not (holding O1)) (safe O1))"),
    ("(and (holding O1) (not (holding O1)))", "false"),
    ("(or (holding O1) (not (holding O1)))", "(and)"),
    ("(and (holding O1) true)", "(holding O1)"),
    ("(or ?a (and ?b ?c))", "(and (or ?a ?b) (or ?c ?a))"),
    (
        "(:goal (and (visited-place P59110) (at-place P10247)))",
        "(and (at-place P10247) (visited-place P59110))",
    ),
]

NOT_EQUIVALENT = [
    ("(object-in-place O1 P2)", "(object-in-place P2 O1)"),  # argument order matters
    ("(visited-place P1)", "(at-place P1)"),
    ("(visited-place P1)", "(visited-place P2)"),
    ("(and (holding O1) (holding O2))", "(or (holding O1) (holding O2))"),
    ("(or (holding O1) (and (holding O2) (safe O3)))", "(and (or (holding O1) (holding O2)) (safe O3))"),
    ("(not (and (holding O1) (holding O2)))", "(and (not (holding O1)) (not (holding O2)))"),
    ("(holding O1)", "(and (holding O1) (safe O1))"),
    ("(and (holding O1) (not (holding O1)))", "true"),
    (
        "(or (holding O19) (holding O30) (holding O64) (holding O79))",
        "(or (holding O19) (holding O30) (holding O64))",
    ),
]


# (backend, presolve): the defaults, the presolve shortcuts, and each SAT solver deciding on its own.
SOLVERS = [("auto", None), ("auto", True), ("sympy", None), ("pysat", False), ("sympy", False)]


@pytest.mark.parametrize(("a", "b"), EQUIVALENT)
@pytest.mark.parametrize(("backend", "presolve"), SOLVERS)
def test_equivalent(a: str, b: str, backend: str, presolve: bool | None) -> None:
    options = {"backend": backend, "presolve": presolve}
    assert goals_equivalent(a, b, **options)  # type: ignore[arg-type]
    assert goals_equivalent(b, a, **options)  # type: ignore[arg-type]
    assert goal_counterexample(a, b, **options) is None  # type: ignore[arg-type]


@pytest.mark.parametrize(("a", "b"), NOT_EQUIVALENT)
@pytest.mark.parametrize(("backend", "presolve"), SOLVERS)
def test_not_equivalent_with_a_valid_counterexample(
    a: str, b: str, backend: str, presolve: bool | None
) -> None:
    options = {"backend": backend, "presolve": presolve}
    assert not goals_equivalent(a, b, **options)  # type: ignore[arg-type]
    state = goal_counterexample(a, b, **options)  # type: ignore[arg-type]
    assert state is not None
    assert set(state) == {format_goal(atom) for atom in goal_atoms(f"(and {a} {b})")}
    true_atoms = [atom for atom, value in state.items() if value]
    assert evaluate_goal(a, true_atoms) != evaluate_goal(b, true_atoms)


@pytest.mark.parametrize("presolve", [True, False])
def test_symbol_case_sensitivity_is_optional(presolve: bool) -> None:
    assert goals_equivalent("(visited-place p4)", "(visited-place P4)", presolve=presolve)
    assert not goals_equivalent(
        "(visited-place p4)", "(visited-place P4)", case_sensitive_symbols=True, presolve=presolve
    )
    assert not goals_equivalent(
        "(and (visited-place p4) (visited-place P4))",
        "(visited-place P4)",
        case_sensitive_symbols=True,
        presolve=presolve,
    )


# ---------------------------------------------------------------------------------------------------
# Equivalence: 70+ atoms, where truth tables are out of reach


def _atoms(n: int) -> list[Atom]:
    predicates = [p for p in HERACLES_DOMAIN.predicates if HERACLES_DOMAIN.arity(p) == 1]
    return [Atom(predicates[i % len(predicates)], (f"O{i}",)) for i in range(n)]


def _read_once(rng: random.Random, atoms: list[Atom]) -> Goal:
    """A random formula using each atom exactly once: every atom then matters to its truth value."""
    if len(atoms) == 1:
        return Not(atoms[0]) if rng.random() < 0.3 else atoms[0]
    k = rng.randint(2, min(4, len(atoms)))
    cuts = sorted(rng.sample(range(1, len(atoms)), k - 1))
    groups = [atoms[i:j] for i, j in zip([0, *cuts], [*cuts, len(atoms)], strict=True)]
    node: Goal = (And if rng.random() < 0.5 else Or)(tuple(_read_once(rng, g) for g in groups))
    return Not(node) if rng.random() < 0.2 else node


def _negated(goal: Goal) -> Goal:
    return goal.operand if isinstance(goal, Not) else Not(goal)


def _rewrite(rng: random.Random, goal: Goal) -> Goal:
    """An equivalent goal: shuffled operands, De Morgan, double negations, some distribution."""
    if isinstance(goal, Atom):
        return Not(Not(goal)) if rng.random() < 0.1 else goal
    if isinstance(goal, Not):
        inner = goal.operand
        if isinstance(inner, And | Or) and rng.random() < 0.5:  # push the negation inwards
            dual = Or if isinstance(inner, And) else And
            return dual(tuple(_rewrite(rng, _negated(op)) for op in inner.operands))
        return Not(_rewrite(rng, inner))
    assert isinstance(goal, And | Or)
    operands = [_rewrite(rng, op) for op in goal.operands]
    rng.shuffle(operands)
    kind, dual = (And, Or) if isinstance(goal, And) else (Or, And)
    splittable = [i for i, op in enumerate(operands) if isinstance(op, dual) and len(op.operands) <= 3]
    target = splittable[0] if splittable else None
    if target is not None and len(operands) == 2 and rng.random() < 0.5:  # a*(b+c) -> a*b + a*c
        other, split = operands[1 - target], operands[target]
        return dual(tuple(kind((other, part)) for part in split.operands))  # type: ignore[union-attr]
    if rng.random() < 0.3:  # De Morgan: (and xs) -> (not (or (not x)...))
        return Not(dual(tuple(_negated(op) for op in operands)))
    return kind(tuple(operands))


def _flip_one_atom(rng: random.Random, goal: Goal, atom: Atom) -> Goal:
    if goal == atom:
        return Not(goal)
    if isinstance(goal, Not):
        return Not(_flip_one_atom(rng, goal.operand, atom))
    if isinstance(goal, And | Or):
        return type(goal)(tuple(_flip_one_atom(rng, op, atom) for op in goal.operands))
    return goal


@pytest.mark.parametrize("n_atoms", [70, 140])
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("presolve", [True, False])
def test_large_random_goals(n_atoms: int, seed: int, presolve: bool) -> None:
    rng = random.Random(seed)
    atoms = _atoms(n_atoms)
    rng.shuffle(atoms)
    goal = _read_once(rng, atoms)
    rewritten = _rewrite(rng, goal)
    assert len(goal_atoms(goal)) == n_atoms
    assert format_goal(rewritten) != format_goal(goal)
    assert goals_equivalent(goal, rewritten, presolve=presolve)
    assert goals_equivalent(parse_goal(format_goal(rewritten)), format_goal(goal), presolve=presolve)
    flipped = _flip_one_atom(rng, goal, rng.choice(atoms))
    assert not goals_equivalent(flipped, rewritten, presolve=presolve)
    state = goal_counterexample(flipped, rewritten, presolve=presolve)
    assert state is not None and len(state) == n_atoms
    true_atoms = [a for a, v in state.items() if v]
    assert evaluate_goal(flipped, true_atoms) != evaluate_goal(rewritten, true_atoms)


def test_random_goals_with_the_sympy_fallback() -> None:
    """The pure-Python fallback is correct but slow past ~50 atoms on equivalent pairs: test it at 35."""
    rng = random.Random(11)
    atoms = _atoms(35)
    goal = _read_once(rng, atoms)
    rewritten = _rewrite(rng, goal)
    assert goals_equivalent(goal, rewritten, backend="sympy", presolve=False)
    flipped = _flip_one_atom(rng, goal, atoms[5])
    assert not goals_equivalent(flipped, rewritten, backend="sympy", presolve=False)


# ---------------------------------------------------------------------------------------------------
# Properties against exhaustive truth tables (small atom sets)

_small_atoms = st.sampled_from([Atom("holding", (f"O{i}",)) for i in range(4)] + [Atom("?a"), Atom("?b")])
_goals = st.recursive(
    _small_atoms | st.builds(Constant, st.booleans()),
    lambda inner: (
        st.builds(Not, inner)
        | st.builds(And, st.lists(inner, max_size=4).map(tuple))
        | st.builds(Or, st.lists(inner, max_size=4).map(tuple))
        | st.builds(Imply, inner, inner)
    ),
    max_leaves=12,
)


def _nodes(goal: Goal) -> list[Goal]:
    children: tuple[Goal, ...] = ()
    if isinstance(goal, Not):
        children = (goal.operand,)
    elif isinstance(goal, And | Or):
        children = goal.operands
    elif isinstance(goal, Imply):
        children = (goal.antecedent, goal.consequent)
    return [goal, *(n for child in children for n in _nodes(child))]


def _truth_table(goal: Goal, atoms: list[Atom]) -> tuple[bool, ...]:
    return tuple(
        evaluate_goal(goal, [a for a, bit in zip(atoms, bits, strict=True) if bit])
        for bits in itertools.product([False, True], repeat=len(atoms))
    )


def _all_atoms(*goals: Goal) -> list[Atom]:
    return list({a: None for g in goals for a in goal_atoms(g)})


@settings(max_examples=300, deadline=None, database=None)
@given(_goals, _goals)
def test_equivalence_matches_truth_tables(a: Goal, b: Goal) -> None:
    atoms = _all_atoms(a, b)
    expected = _truth_table(a, atoms) == _truth_table(b, atoms)
    for backend, presolve in SOLVERS:
        assert goals_equivalent(a, b, backend=backend, presolve=presolve) == expected  # type: ignore[arg-type]


@settings(max_examples=300, deadline=None, database=None)
@given(_goals)
def test_simplify_and_format_preserve_meaning(goal: Goal) -> None:
    simple = simplify_goal(goal)
    assert goals_equivalent(goal, simple)
    nnf = negation_normal_form(goal)
    assert goals_equivalent(goal, nnf, presolve=False)
    assert all(isinstance(node.operand, Atom) for node in _nodes(nnf) if isinstance(node, Not))
    assert not any(isinstance(node, Imply) for node in _nodes(nnf))
    assert len(format_goal(simple)) <= len(format_goal(goal)) + len("(or (not ))")
    assert parse_goal(format_goal(goal)) == goal


def test_simplify_examples() -> None:
    assert format_goal(simplify_goal("(or (holding O1) (and (holding O1) (safe O2)))")) == "(holding O1)"
    assert simplify_goal("(and (holding O1) (not (holding O1)))") == Constant(False)
    assert format_goal(simplify_goal("(and (and (safe O1) true) (not (not (safe O2))) (safe O1))")) == (
        "(and (safe O1) (safe O2))"
    )


@settings(max_examples=300, deadline=None, database=None)
@given(
    st.lists(
        st.sampled_from([*"()?; \n", "and", "or", "not", "imply", ":goal", "holding", "O1", "true"]),
        max_size=30,
    ).map("".join)
)
def test_fuzz_parse_never_crashes(text: str) -> None:
    try:
        goal = parse_goal(text)
    except GoalParseError as exc:
        assert 0 <= exc.position <= len(text)
        return
    assert goals_equivalent(goal, goal)
