"""The step's action menu: which actions and objects a reply may name (affordances, hand rules, refused
repeats), the GBNF grammar that enforces it (compiled by llama.cpp's own parser), and the parser that
validates replies from models that ignore grammars (endpoints)."""

from __future__ import annotations

from typing import Any

import pytest

from scenerag.agents.embodied import HOUSEHOLD, AgentKind, EmbodiedConfigError, allowed_actions
from scenerag.agents.embodied.menu import ActionMenu, build_menu, call_key
from scenerag.sim.household.catalog import CATALOG

NEAR = {"isInteractable": True}
OBJECTS: dict[str, dict[str, Any]] = {
    "Fridge_1": {
        "openable": True,
        "isOpen": False,
        "receptacle": True,
        "pickupable": False,
        "isPickedUp": False,
        **NEAR,
    },
    "Drawer_2": {
        "openable": True,
        "isOpen": True,
        "receptacle": True,
        "pickupable": False,
        "isPickedUp": False,
        **NEAR,
    },
    "LightSwitch_1": {
        "toggleable": True,
        "isToggled": False,
        "pickupable": False,
        "isPickedUp": False,
        **NEAR,
    },
    "Faucet_1": {"toggleable": True, "isToggled": True, "pickupable": False, "isPickedUp": False, **NEAR},
    "Apple_1": {"pickupable": True, "isPickedUp": False, "sliceable": True, "isSliced": False, **NEAR},
    "Knife_1": {"pickupable": True, "isPickedUp": True, **NEAR},
    # out of reach: only moveto (no manipulation until the robot is next to it)
    "Mug_3": {"pickupable": True, "isPickedUp": False, "receptacle": True, "isInteractable": False},
}
OFFERED = allowed_actions(AgentKind.STRICT, (a.name for a in HOUSEHOLD.actions))


def menu(holding: bool = False, **options: Any) -> ActionMenu:
    return build_menu(HOUSEHOLD.actions, OFFERED, OBJECTS, holding=holding, **options)


def ids(m: ActionMenu, action: str) -> tuple[str, ...] | None:
    item = m.action(action)
    assert item is not None, action
    return item.choices[0]


def test_objects_are_offered_by_their_affordances() -> None:
    empty = menu()
    assert ids(empty, "open") == ("Fridge_1",) and ids(empty, "close") == ("Drawer_2",)
    assert ids(empty, "toggleon") == ("LightSwitch_1",) and ids(empty, "toggleoff") == ("Faucet_1",)
    # the held knife and the out-of-reach mug are not offered for pickup
    assert ids(empty, "pickup") == ("Apple_1",)
    assert ids(empty, "moveto") == ("Mug_3",)  # only what is out of reach (and not held)
    assert empty.affordances() == {
        "Mug_3": ["moveto"],
        "Fridge_1": ["open"],
        "Drawer_2": ["close"],
        "LightSwitch_1": ["toggleon"],
        "Faucet_1": ["toggleoff"],
        "Apple_1": ["pickup"],
    }
    assert empty.calls() == [
        "moveto(Mug_3)",
        "pickup(Apple_1)",
        "open(Fridge_1)",
        "close(Drawer_2)",
        "toggleon(LightSwitch_1)",
        "toggleoff(Faucet_1)",
    ]
    assert ids(empty, "search") == tuple(sorted(CATALOG))  # object types: the search's vocabulary
    # hand rules: nothing held -> no placeon/slice/fill; holding -> no pickup
    assert {"placeon", "slice", "fillheldobjectwithwater", "pourwaterinto"}.isdisjoint(empty.names)
    held = menu(holding=True)
    # placeon: reachable receptacles that are open or do not open (not the closed fridge, not the far mug)
    assert "pickup" not in held.names and ids(held, "placeon") == ("Drawer_2",)
    assert ids(held, "slice") == ("Apple_1",)
    assert held.affordances()["Fridge_1"] == ["open"] and "Knife_1" not in held.affordances()
    assert "getdiscoveredobjects" not in empty.names and empty.names[-1] == "done"


def test_an_action_without_a_candidate_is_left_out() -> None:
    bare = build_menu(HOUSEHOLD.actions, OFFERED, {}, holding=False)
    assert bare.names == ["randomlyexplore", "getvisibleobjects", "search", "adjustpositioning", "done"]
    assert '"adjustpositioning()"' in bare.grammar()  # its object is optional


def test_grammar_compiles_with_llama_cpp_and_names_only_menu_calls() -> None:
    from llama_cpp.llama_grammar import LlamaGrammar

    for m in (
        menu(),
        menu(holding=True, objects_line=True),
        build_menu(HOUSEHOLD.actions, OFFERED, {}, holding=False),
    ):
        text = m.grammar()
        LlamaGrammar.from_string(text, verbose=False)  # raises on a malformed grammar
        assert text.startswith('root ::= "Thought: " thought "\\n"')
        assert ('"Objects: " objects' in text) == m.objects_line
    text = menu().grammar()
    assert 'open-arg0 ::= "Fridge_1"\n' in text and 'toggleon-arg0 ::= "LightSwitch_1"\n' in text
    assert "thought ::= [^\\n]{1,160}" in text
    # a thought prefix (the robot's hand) is written by the grammar before the free thought
    prefixed = menu(thought_prefix="My hand is empty; ").grammar()
    LlamaGrammar.from_string(prefixed, verbose=False)
    assert prefixed.startswith('root ::= "Thought: " "My hand is empty; " thought "\\n"')


def test_refused_calls_leave_the_grammar_and_the_parser_refuses_them() -> None:
    refused = {
        ("open", ("Fridge_1",)): "Refused: open(Fridge_1) failed",
        ("search", ("light",)): "Refused: search(light) failed",
        ("randomlyexplore", ()): "Refused: randomlyexplore() failed",
    }
    m = menu(refused=refused)
    assert m.action("open") is None  # its only object is refused
    assert "randomlyexplore" not in m.names
    assert "open-arg0" not in m.grammar() and "Fridge_1" not in m.affordances()
    for reply, action in (
        ("Thought: t\nAction: open(Fridge_1)", "open"),
        ("Thought: t\nAction: search( light )", "search"),
        ("Thought: t\nAction: randomlyexplore()", "randomlyexplore"),
    ):
        parsed = m.parse(reply)
        assert (
            parsed.refused
            and parsed.action == action
            and parsed.error == refused[next(k for k in refused if k[0] == action)]
        )
    assert m.parse("Thought: t\nAction: open(Fridge_1)").arguments == {"object_id": "Fridge_1"}
    assert call_key("search", {"query": "  LIGHT "}, HOUSEHOLD.action("search")) == ("search", ("light",))
    # refusing everything leaves the unrestricted menu (the parser still refuses)
    everything = {("done", ()): "no", ("randomlyexplore", ()): "no"}
    bare = build_menu(HOUSEHOLD.actions, ["randomlyexplore", "done"], {}, holding=False, refused=everything)
    assert bare.names == ["randomlyexplore", "done"] and bare.parse("Action: done()").refused


def test_parser_tolerates_form_and_explains_errors() -> None:
    m = menu(objects_line=True)
    parsed = m.parse(
        "thought:  the fridge is closed \nObjects: Fridge, none, stove  knob\nAction: `open('fridge_1')`"
    )
    assert (parsed.thought, parsed.objects, parsed.action, parsed.arguments, parsed.error) == (
        "the fridge is closed",
        ["Fridge", "stove knob"],
        "open",
        {"object_id": "Fridge_1"},
        None,
    )
    assert m.parse("Thought: x\nAction: search(Egg)").arguments == {"query": "Egg"}
    assert m.parse("Thought: x\nAction: adjustpositioning()").arguments == {}
    assert "not an action you can take now" in (m.parse("Action: fly(Fridge_1)").error or "")
    assert m.parse("Action: open(Apple_1)").error == (
        "open cannot take 'Apple_1' now (open needs openable=true, isOpen=false; Apple_1 has no openable, no isOpen); "
        "it can take: Fridge_1"
    )
    assert m.parse("Action: pickup(Mug_3)").error == (
        "pickup cannot take 'Mug_3' now (pickup needs isInteractable=true; Mug_3 has isInteractable=false); "
        "it can take: Apple_1"
    )
    assert "takes open(object_id)" in (m.parse("Action: open()").error or "")
    assert "no 'Action: name(argument)' line" in (m.parse("I would open the fridge.").error or "")
    assert m.parse("Thought: x\nObjects: none\nAction: done()").objects == []


def test_menu_needs_known_actions() -> None:
    with pytest.raises(EmbodiedConfigError, match="no action spec"):
        build_menu(HOUSEHOLD.actions, ["teleport"], {}, holding=False)
    with pytest.raises(EmbodiedConfigError, match="at least one action"):
        ActionMenu([]).grammar()


def _matches(rules: dict[str, str], rule: str, text: str) -> bool:
    """Whether ``text`` is a sentence of ``rule`` in the small GBNF subset ``_text_excluding`` writes:
    alternatives of sequences of ``[class]``, ``[class]*``, ``""`` and rule names."""
    import re

    def ends(rule_name: str, start: int) -> set[int]:
        out: set[int] = set()
        for alternative in rules[rule_name].split(" | "):
            positions = {start}
            for token in re.findall(r'\[[^\]]*\]\*?|""|[a-z0-9-]+', alternative):
                following: set[int] = set()
                for pos in positions:
                    if token == '""':
                        following.add(pos)
                    elif token.startswith("["):
                        chars = token[1 : token.index("]")]
                        if token.endswith("*"):
                            end = pos
                            following.add(end)
                            while end < len(text) and text[end] in chars:
                                end += 1
                                following.add(end)
                        elif pos < len(text) and text[pos] in chars:
                            following.add(pos + 1)
                    else:
                        following |= ends(token, pos)
                positions = following
            out |= positions
        return out

    return len(text) in ends(rule, 0)


def test_refused_words_are_left_out_of_the_free_text_grammar_in_any_spelling() -> None:
    from llama_cpp.llama_grammar import LlamaGrammar

    from scenerag.agents.embodied import ActionParameter, ActionSpec
    from scenerag.agents.embodied.menu import _text_excluding, normalize_text

    find = ActionSpec("find", "Find anything.", (ActionParameter("what", "words", kind="text"),))
    free = build_menu([find], ["find", "done"], {}, holding=False)
    assert 'act-find ::= "find(" text ")"' in free.grammar() and free.action("find").choices == (None,)
    m = build_menu(
        [find],
        ["find", "done"],
        {},
        holding=False,
        refused={("find", ("lightswitch",)): "no", ("find", ("egg",)): "no"},
    )
    text = m.grammar()
    assert 'act-find ::= "find(" find-text0 ")"' in text
    LlamaGrammar.from_string(text, verbose=False)
    assert m.parse("Action: find(Light Switch)").refused and not m.parse("Action: find(light)").refused
    # a vocabulary: the refused word leaves the enumeration
    vocab = menu(refused={("search", ("lightswitch",)): "no"})
    assert "LightSwitch" not in (ids(vocab, "search") or ()) and "Fridge" in (ids(vocab, "search") or ())
    assert vocab.parse("Action: search(light switch)").refused
    assert vocab.parse("Action: search(stove knob)").arguments == {"query": "StoveKnob"}
    assert "search cannot take 'spaceship' now" in (vocab.parse("Action: search(spaceship)").error or "")
    rules = _text_excluding("t", {"lightswitch", "egg"})
    for refused in ("lightswitch", "Light switch", "light_switch ", "LIGHT-SWITCH", "egg", "Egg", "e g g"):
        assert normalize_text(refused) in {"lightswitch", "egg"}
        assert not _matches(rules, "t", refused), refused
    for allowed in ("light", "light switch 2", "eggs", "Egg cup", "Fridge", "l", "e"):
        assert _matches(rules, "t", allowed), allowed
    assert not _matches(rules, "t", "") and not _matches(rules, "t", " egg")


def test_only_whole_words_and_ids_of_what_a_refusal_meant_stay() -> None:
    """A refused word or id takes the words and ids it begins with out of the grammar too: with Potato
    refused, a model meaning Potato cannot stop at Pot; with Cabinet_11 refused, not at Cabinet_1."""
    cabinets = {
        "Cabinet_1": {"openable": True, "isOpen": False, "receptacle": True, **NEAR},
        "Cabinet_11": {"openable": True, "isOpen": False, "receptacle": True, **NEAR},
        "Cabinet_2": {"openable": True, "isOpen": False, "receptacle": True, **NEAR},
    }
    refused = {
        ("search", ("potato",)): "Refused: search(Potato) changed nothing",
        ("open", ("Cabinet_11",)): "Refused: open(Cabinet_11) failed",
    }
    m = build_menu(HOUSEHOLD.actions, OFFERED, cabinets, holding=False, refused=refused)
    words = ids(m, "search") or ()
    assert "Potato" not in words and "Pot" not in words and "Pan" in words
    assert ids(m, "open") == ("Cabinet_2",)
    plain = build_menu(HOUSEHOLD.actions, OFFERED, cabinets, holding=False)
    assert {"Pot", "Potato"} <= set(ids(plain, "search") or ())
    assert ids(plain, "open") == ("Cabinet_1", "Cabinet_11", "Cabinet_2")
    # the task's words restrict the vocabulary
    task = build_menu(HOUSEHOLD.actions, OFFERED, cabinets, holding=False, words=["potato", "Pot"])
    assert ids(task, "search") == ("Pot", "Potato")


def test_a_refused_bare_call_of_an_action_with_optional_arguments_leaves_the_grammar() -> None:
    """adjustpositioning() (its object is optional) refused: the grammar then asks for an object, and
    with no object to give the action is left out."""
    refused = {("adjustpositioning", ()): "Refused: adjustpositioning() changed nothing"}
    m = menu(refused=refused)
    grammar = m.grammar()
    body = next(line for line in grammar.splitlines() if line.startswith("act-adjustpositioning ::= "))
    assert "adjustpositioning-arg0 " in body + " " and ")?" not in body
    assert m.parse("Thought: t\nAction: adjustpositioning()").refused
    bare = build_menu(HOUSEHOLD.actions, OFFERED, {}, holding=False, refused=refused)
    assert "adjustpositioning" not in bare.names
    assert "act-adjustpositioning ::= " in menu().grammar() and ")?" in next(
        line for line in menu().grammar().splitlines() if line.startswith("act-adjustpositioning ::= ")
    )


def test_placeon_is_offered_only_for_receptacles_that_are_open_or_do_not_open() -> None:
    """The action's ``excludes`` state (openable and closed) takes a receptacle out of the menu until it
    is opened; a receptacle without a door (a counter) is always offered; a reply naming a closed one is
    told why."""
    objects = {
        **OBJECTS,
        "CounterTop_1": {"openable": False, "isOpen": False, "receptacle": True, "isPickedUp": False, **NEAR},
    }
    held = build_menu(HOUSEHOLD.actions, OFFERED, objects, holding=True)
    assert ids(held, "placeon") == ("Drawer_2", "CounterTop_1")
    assert "placeon(Fridge_1)" not in held.calls() and "open(Fridge_1)" in held.calls()
    assert '"Fridge_1"' not in held.grammar().split("act-placeon ::=")[1].split("\n")[0]
    reply = held.parse("Thought: x\nAction: placeon(Fridge_1)")
    assert reply.error is not None and "openable=true, isOpen=false" in reply.error
    opened = {**objects, "Fridge_1": {**OBJECTS["Fridge_1"], "isOpen": True}}
    assert "Fridge_1" in ids(build_menu(HOUSEHOLD.actions, OFFERED, opened, holding=True), "placeon")


def test_placeon_affordance_agrees_with_the_simulator_on_closed_receptacles() -> None:
    """Against the real simulator: holding an apple next to the closed fridge, ``placeon`` is not on the
    menu and the simulator would answer ``receptacle_closed``; once the fridge is open it is offered and
    the simulator takes the apple."""
    from scenerag.agents.embodied.household import HouseholdEpisode
    from scenerag.agents.embodied.planner import EmbodiedPlanner

    episode = HouseholdEpisode.create("l_shape", 0, 0)
    assert episode.execute("search", {"query": "Apple"}).success
    assert episode.execute("pickup", {"object_id": "Apple_1"}).success
    assert episode.execute("search", {"query": "Fridge"}).success
    planner = EmbodiedPlanner(_NoModel(), AgentKind.FULL_MEM, HOUSEHOLD)

    def fridge_menu() -> ActionMenu:
        graph, _ = episode.observe()
        return planner.menu(graph, None)

    closed = fridge_menu()
    assert "open(Fridge_1)" in closed.calls() and "placeon(Fridge_1)" not in closed.calls()
    assert episode.execute("placeon", {"receptacle_id": "Fridge_1"}).error == "receptacle_closed"
    assert episode.execute("open", {"object_id": "Fridge_1"}).success
    assert "placeon(Fridge_1)" in fridge_menu().calls()
    assert episode.execute("placeon", {"receptacle_id": "Fridge_1"}).success


class _NoModel:
    """A chat model the test never calls (the planner only builds menus here)."""

    name = "none"

    def count_tokens(self, text: str) -> int:
        return len(text.split())
