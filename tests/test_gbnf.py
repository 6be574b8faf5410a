"""Grammars built in Python (scenerag.lang.gbnf): the GBNF text llama.cpp compiles and the recognizer that
checks strings against the same grammar."""

from __future__ import annotations

import pytest

from scenerag.lang.gbnf import Chars, Grammar, GrammarError, Ref, Rep, alt, one_of, opt, plus, seq, star


def test_one_of_accepts_exactly_its_strings() -> None:
    words = ["seating", "sign", "storage", "R1", "R12", "R2"]
    g = Grammar({"root": one_of(words)})
    for w in words:
        assert g.accepts(w), w
    for w in ("", "si", "signs", "R", "R3", "seat", "storagex"):
        assert not g.accepts(w), w
    # a prefix tree: the shared start is written once
    assert g.text.count('"s"') == 1 and g.text.startswith('root ::= "R" ("1" "2"? | "2")')


def test_sequences_alternatives_repetitions_and_classes() -> None:
    g = Grammar(
        {
            "root": seq(Ref("word"), star(seq(" ", Ref("word"))), opt("?")),
            "word": alt(plus(Chars("a-z")), seq("#", Chars("12"))),
        }
    )
    assert g.accepts("which room is #1 in?") and g.accepts("one")
    assert not g.accepts("#3") and not g.accepts("Room") and not g.accepts("two  spaces")
    negated = Grammar({"root": plus(Chars("^#?\\n"))})
    assert (
        negated.accepts("Which room is O3 in") and not negated.accepts("a?b") and not negated.accepts("a\nb")
    )


def test_bounded_repetition_and_rendering() -> None:
    g = Grammar({"root": Ref("r"), "r": seq("a", star("b"), "c"), "s": Rep(Chars("0-9"), 2, 3)})
    assert g.accepts("ac") and g.accepts("abbbc")
    assert "root ::= r" in g.text and 'r ::= "a" "b"* "c"' in g.text and "s ::= [0-9]{2,3}" in g.text
    digits = Grammar({"root": Rep(Chars("0-9"), 2, 3)})
    assert (
        digits.accepts("12")
        and digits.accepts("123")
        and not digits.accepts("1")
        and not digits.accepts("1234")
    )


def test_errors_name_the_problem() -> None:
    with pytest.raises(GrammarError, match="undefined rule"):
        Grammar({"root": Ref("missing")})
    with pytest.raises(GrammarError, match="no rule 'root'"):
        Grammar({"start": seq("a")})
    with pytest.raises(GrammarError, match="bad rule name"):
        Grammar({"root": seq("a"), "Bad_Name": seq("b")})
    with pytest.raises(GrammarError):
        one_of([])


def test_longest_prefix_points_at_where_a_string_leaves_the_grammar() -> None:
    g = Grammar({"root": seq("MATCH (", one_of(["Room", "Object"]), ")")})
    assert g.longest_prefix("MATCH (Light)") == len("MATCH (")
    assert g.longest_prefix("MATCH (Room)") == len("MATCH (Room)")
