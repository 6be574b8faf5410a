"""SLDP: parsing (syntax, errors with positions), equality semantics, formatting round trips, extraction."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scenerag.errors import SceneRagError
from scenerag.lang import (
    SldpDict,
    SldpFormatError,
    SldpList,
    SldpNumber,
    SldpParseError,
    SldpPoint,
    SldpSet,
    SldpString,
    extract_sldp,
    format_sldp,
    from_python,
    parse_llm_answer,
    parse_sldp,
    sldp_equal,
    sldp_type,
    to_sldp,
)

# ---------------------------------------------------------------------------------------------------
# Parsing


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<1, 2, 3>", SldpSet((SldpNumber(1), SldpNumber(2), SldpNumber(3)))),
        ("[a, b]", SldpList((SldpString("a"), SldpString("b")))),
        (
            "{k1: v1, k2: 2}",
            SldpDict(((SldpString("k1"), SldpString("v1")), (SldpString("k2"), SldpNumber(2)))),
        ),
        ("POINT(1 2.5 -3)", SldpPoint((1.0, 2.5, -3.0))),
        ("point( 1, 2 )", SldpPoint((1.0, 2.0))),
        ("-1.5e3", SldpNumber(-1500.0)),
        (".5", SldpNumber(0.5)),
        ("+7", SldpNumber(7)),
        ("  coffee   table  ", SldpString("coffee   table")),
        ("children's room", SldpString("children's room")),
        ("'O12'", SldpString("O12")),
        ('"a, b: <c>"', SldpString("a, b: <c>")),
        ('"say \\"hi\\"\\n"', SldpString('say "hi"\n')),
        ("true", SldpString("true")),
        ("[1, 2,]", SldpList((SldpNumber(1), SldpNumber(2)))),
        ("<>", SldpSet(())),
        ("[]", SldpList(())),
        ("{}", SldpDict(())),
        ("{3: x}", SldpDict(((SldpString("3"), SldpString("x")),))),
    ],
)
def test_parse_values(text: str, expected: Any) -> None:
    assert parse_sldp(text) == expected


def test_integers_stay_int_and_floats_float() -> None:
    assert isinstance(parse_sldp("12").value, int)  # type: ignore[union-attr]
    assert isinstance(parse_sldp("12.0").value, float)  # type: ignore[union-attr]
    assert isinstance(parse_sldp("1e2").value, float)  # type: ignore[union-attr]


def test_nesting_and_whitespace_insensitivity() -> None:
    compact = "[{k0:1.12},{k1:v1,k2:POINT(1.12 2 3)},<a,<b,[c]>>]"
    spaced = " [ { k0 : 1.12 } ,\n { k1 : v1 , k2 : POINT( 1.12  2  3 ) } ,\t< a , < b , [ c ] > > ] "
    assert parse_sldp(compact) == parse_sldp(spaced)
    value = parse_sldp(compact)
    assert sldp_type(value) == "list"
    assert [sldp_type(v) for v in value.items] == ["dict", "dict", "set"]  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("text", "position", "needle"),
    [
        ("[1, 2", 5, "never closed"),
        ("[1, 2 >", 6, "expected ',' or ']'"),
        ("{a 1}", 4, "expected ':'"),
        ("{a: 1, A: 2}", 7, "duplicate dict key"),
        ("foo(1)", 3, "only allowed in POINT"),
        ("POINT(1 2 3 4)", 0, "2 or 3 coordinates"),
        ("POINT(1 x 3)", 8, "finite numbers"),
        ("POINT(1 2", 9, "never closed"),
        ('"abc', 0, "never closed"),
        ("", 0, "empty"),
        ("   ", 3, "empty"),
        ("]", 0, "expected a value"),
        ("<1, 2> x", 7, "unexpected text after the value"),
        ("1e400", 0, "out of range"),
        ("<1 2>", 1, "expected ','"),
        ("[1,,2]", 3, "expected a value"),
        ("{<a>: 1}", 1, "dict key"),
    ],
)
def test_parse_errors_carry_position_and_caret(text: str, position: int, needle: str) -> None:
    with pytest.raises(SldpParseError) as info:
        parse_sldp(text)
    err = info.value
    assert isinstance(err, SceneRagError)
    assert err.position == position
    assert needle in err.reason
    assert f"position {position}" in str(err)
    caret_line = err.excerpt.splitlines()[1]
    assert caret_line.endswith("^")


def test_caret_points_at_the_offending_character_in_long_text() -> None:
    text = "[" + ", ".join(f"O{i}" for i in range(200)) + " }"
    with pytest.raises(SldpParseError) as info:
        parse_sldp(text)
    snippet, caret = info.value.excerpt.splitlines()
    assert snippet[caret.index("^")] == "}"
    assert len(snippet) < 80


def test_deep_nesting_is_a_parse_error_not_a_crash() -> None:
    with pytest.raises(SldpParseError, match="nested more than"):
        parse_sldp("[" * 5000 + "]" * 5000)
    assert parse_sldp("[" * 50 + "]" * 50) is not None


# ---------------------------------------------------------------------------------------------------
# Equality


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("<1, 2, 3>", "<3, 1, 2>"),
        ("<a, a, b>", "<b, a>"),  # set: duplicates count once
        ("<1.0, 1.009>", "<1.009, 1.0>"),
        ("<1.0, 0.99>", "<1.0, 1.01>"),  # needs the non-greedy pairing 1.0-1.01, 0.99-1.0
        ("[Chair, TABLE]", "[chair,  table ]"),
        ("coffee   table", "Coffee Table"),
        ("{tree: 163, rock: 62}", "{ROCK: 62, 'tree': 163.004}"),
        ("{1: a}", "{1.0: A}"),
        ("12", "'12'"),  # number vs numeric string: numerically
        ("'1.0'", "'1'"),
        ("POINT(1 2 3)", "POINT(1.005 1.995 3.01)"),
        ("1.01", "1.0"),  # inclusive tolerance boundary
        ("[<O1, O2>, {k: POINT(0 0)}]", "[<O2, O1>, {K: POINT(0.001 -0.001)}]"),
        ("<<1, 2>, <3>>", "<<3>, <2, 1>>"),
    ],
)
def test_equal(a: str, b: str) -> None:
    assert sldp_equal(a, b)
    assert sldp_equal(b, a)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("[1, 2, 3]", "[3, 2, 1]"),  # lists are ordered
        ("<a, b>", "[a, b]"),  # different container types
        ("POINT(1 2 3)", "[1, 2, 3]"),
        ("POINT(1 2)", "POINT(1 2 0)"),
        ("<1.0, 1.005>", "<1.0>"),  # two distinct elements are not one
        ("<1.0, 0.99>", "<1.0, 1.011>"),
        ("1.0101", "1"),
        ("{a: 1, b: 2}", "{a: 1}"),
        ("{a: 1}", "{b: 1}"),
        ("{a: 1}", "{a: 2}"),
        ("chair", "chairs"),
        ("12", "twelve"),
        ("<a, b>", "<a, c>"),
        ("<a, 1>", "<a, 2>"),
        ("'10000000000000000000000000001'", "10000000000000000000000000000"),
    ],
)
def test_not_equal(a: str, b: str) -> None:
    assert not sldp_equal(a, b)
    assert not sldp_equal(b, a)


def test_tolerance_is_configurable_and_zero_means_exact() -> None:
    assert sldp_equal("1.5", "1.6", tol=0.2)
    assert not sldp_equal("1.5", "1.6")
    assert sldp_equal("<1, 2>", "<2.0, 1.0>", tol=0)
    assert not sldp_equal("[1.0]", "[1.001]", tol=0)
    with pytest.raises(ValueError):
        sldp_equal("1", "1", tol=-1)


def test_sldp_equal_accepts_parsed_and_python_values() -> None:
    assert sldp_equal(parse_sldp("<O1, O2>"), {"O2", "O1"})
    assert sldp_equal({"x": 1, "y": 2, "z": 3}, "POINT(1 2 3.001)")
    assert sldp_equal({"chair": 2}, "{Chair: 2}")


def test_large_numeric_sets_use_matching_not_greedy() -> None:
    rng = random.Random(3)
    base = [i * 0.05 for i in range(400)]
    jittered = [x + rng.uniform(-0.0099, 0.0099) for x in base]
    rng.shuffle(jittered)
    assert sldp_equal(from_python(set(base)), SldpSet(tuple(SldpNumber(x) for x in jittered)))
    jittered[0] += 0.5
    assert not sldp_equal(from_python(set(base)), SldpSet(tuple(SldpNumber(x) for x in jittered)))


def test_parse_error_from_sldp_equal_text() -> None:
    with pytest.raises(SldpParseError):
        sldp_equal("<1, 2", "<1, 2>")


# ---------------------------------------------------------------------------------------------------
# Formatting


def test_to_sldp_formats_python_values() -> None:
    assert to_sldp({"O2", "O1"}) == "<O1, O2>"
    assert to_sldp(frozenset()) == "<>"
    assert to_sldp((1, 2.5, "coffee table")) == "[1, 2.5, coffee table]"
    assert to_sldp({"x": 1, "y": 2, "z": 3}) == "POINT(1.0 2.0 3.0)"
    assert to_sldp({"x": 1.5, "y": -2}) == "POINT(1.5 -2.0)"
    assert to_sldp({"chair": 3, 7: "seven"}) == "{chair: 3, 7: seven}"
    assert to_sldp(["12", "", "a,b", " pad"]) == '["12", "", "a,b", " pad"]'
    assert to_sldp([True, None]) == "[true, null]"


def test_to_sldp_neo4j_point_and_numpy() -> None:
    import numpy as np
    from neo4j.spatial import CartesianPoint

    assert to_sldp(CartesianPoint((1.0, 2.0, 3.0))) == "POINT(1.0 2.0 3.0)"
    assert to_sldp(np.array([1, 2])) == "[1, 2]"
    assert to_sldp(np.float64(0.25)) == "0.25"


@pytest.mark.parametrize(
    "bad", [math.nan, math.inf, {"k": object()}, {(1, 2): "tuple key"}, {1: "a", "1": "b"}]
)
def test_to_sldp_rejects_unwritable_values(bad: Any) -> None:
    with pytest.raises(SldpFormatError):
        to_sldp(bad)


# ---------------------------------------------------------------------------------------------------
# Extraction from LLM replies


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("<O1, O2>", "<O1, O2>"),
        ("Answer: <O1, O2>.", "<O1, O2>"),
        ("Thinking...\n<answer> [1, 2] </answer>", "[1, 2]"),
        ("<answer>draft</answer> then <answer>{a: 1}</answer>", "{a: 1}"),
        ("<answer> <O1, O2", None),
        ("cut off: <answer> <O1, O2>, more", "<O1, O2>"),
        ("Here you go:\n```sldp\n{chair: 3,\n table: 1}\n```\nDone.", "{chair: 3,\n table: 1}"),
        ("**Final answer:** coffee table.", "coffee table"),
        ("The answer is 3.", "3"),
        ("The answer is `POINT(1 2 3)`, computed from the centroid.", "POINT(1 2 3)"),
        ("answer = <R1>\nbecause R1 is the kitchen", "<R1>"),
        ("Final Answer: 42\n\nExplanation: counted the chairs.", "42"),
        ("chair", "chair"),
    ],
)
def test_extract_sldp(reply: str, expected: str | None) -> None:
    if expected is None:
        with pytest.raises(SldpParseError):
            extract_sldp(reply)
        return
    assert extract_sldp(reply) == expected
    parse_sldp(extract_sldp(reply))


def test_extract_sldp_failures_raise_parse_errors() -> None:
    with pytest.raises(SldpParseError):
        extract_sldp("Answer: <O1, O2")
    with pytest.raises(SldpParseError):
        extract_sldp("***")
    assert parse_llm_answer("Answer: <O2, O1>") == SldpSet((SldpString("O2"), SldpString("O1")))


# ---------------------------------------------------------------------------------------------------
# Properties

_scalars = (
    st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
    | st.sampled_from(["chair", "O12", "coffee table", "12", "1.5", "POINT", "true", "children's room"])
)
_hashables = st.recursive(
    _scalars, lambda inner: st.tuples(inner, inner) | st.frozensets(inner, max_size=4), max_leaves=8
)
_python_values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.frozensets(_hashables, max_size=5)
        | st.dictionaries(st.text(max_size=8) | st.integers(), inner, max_size=4)
        | st.fixed_dictionaries(
            {"x": st.floats(-1e6, 1e6), "y": st.floats(-1e6, 1e6), "z": st.floats(-1e6, 1e6)}
        )
    ),
    max_leaves=20,
)


def _maybe_duplicate_keys(value: Any) -> bool:
    """Python dicts whose keys collide as SLDP keys (e.g. 1 and '1') cannot be written; skip them."""
    try:
        from_python(value)
    except SldpFormatError:
        return True
    return False


@settings(max_examples=150, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(_python_values)
def test_round_trip(value: Any) -> None:
    if _maybe_duplicate_keys(value):
        return
    text = to_sldp(value)
    parsed = parse_sldp(text)
    assert parsed == from_python(value)
    assert format_sldp(parsed) == text
    assert sldp_equal(parsed, from_python(value), tol=0)  # a Python str would be read as SLDP text


@settings(max_examples=150, deadline=None, database=None)
@given(_python_values, _python_values)
def test_reflexive_and_symmetric(a: Any, b: Any) -> None:
    if _maybe_duplicate_keys(a) or _maybe_duplicate_keys(b):
        return
    ta, tb = to_sldp(a), to_sldp(b)
    assert sldp_equal(ta, ta)
    assert sldp_equal(ta, tb) == sldp_equal(tb, ta)
    assert sldp_equal(ta, tb, tol=0) == sldp_equal(tb, ta, tol=0)


@settings(max_examples=100, deadline=None, database=None)
@given(st.lists(_scalars, max_size=8), st.randoms(use_true_random=False))
def test_set_permutation_invariance(items: list[Any], rnd: random.Random) -> None:
    values = [from_python(v) for v in items]
    shuffled = values[:]
    rnd.shuffle(shuffled)
    shuffled += values[: len(values) // 2]  # duplicates do not change a set
    assert sldp_equal(SldpSet(tuple(values)), SldpSet(tuple(shuffled)))


@settings(max_examples=200, deadline=None, database=None)
@given(st.floats(-1e6, 1e6), st.sampled_from([0.0, 0.001, 0.004, 0.0099, 0.01]), st.booleans())
def test_tolerance_boundary(x: float, delta: float, negative: bool) -> None:
    y = x - delta if negative else x + delta
    assert sldp_equal(SldpNumber(x), SldpNumber(y))  # within 0.01, boundary included
    far = x + (-0.0101 if negative else 0.0101)
    assert not sldp_equal(SldpNumber(x), SldpNumber(far))
    assert sldp_equal(SldpPoint((x, 0.0, 1.0)), SldpPoint((y, 0.0, 1.0)))
    assert not sldp_equal(SldpPoint((x, 0.0, 1.0)), SldpPoint((far, 0.0, 1.0)))


_sldp_alphabet = st.sampled_from(list("<>[]{}(),:'\"\\ \n.-+e0123456789POINTpointabcO")) | st.characters()


@settings(max_examples=400, deadline=None, database=None)
@given(st.text(_sldp_alphabet, max_size=40))
def test_fuzz_parse_never_crashes(text: str) -> None:
    try:
        value = parse_sldp(text)
    except SldpParseError as exc:
        assert 0 <= exc.position <= len(text)
        return
    assert sldp_equal(value, value)
    assert parse_sldp(format_sldp(value)) is not None


@settings(max_examples=200, deadline=None, database=None)
@given(st.text(_sldp_alphabet, max_size=60))
def test_fuzz_extract_never_crashes(text: str) -> None:
    try:
        extracted = extract_sldp(text)
    except SldpParseError:
        return
    parse_sldp(extracted)
