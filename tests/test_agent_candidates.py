"""Execution-guided candidates, votes, corrections and typed plans of the Cypher agent, with a scripted model
on the real Hydra graph (control flow only: that these features help is measured by benchmarks/agent_bench.py
on question sets nobody tuned for)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import hydra_store_fixture, scripted_agent
from conftest import one_value as _one
from scenerag.agents.model_work import MeteredModel, WorkRates
from scenerag.agents.plan import PLAN_GRAMMAR, Plan, parse_plan, plan_problem
from scenerag.agents.query_repair import (
    bind_path_variable,
    center_arguments,
    drop_idle_with,
    inline_patterns,
    merge_union_by_symbol,
)
from scenerag.agents.voting import Grade, Outcome, normal_answer, vote
from scenerag.agents.words import WordsError, load_words
from scenerag.lang import sldp_equal
from scenerag.llm import ScriptedChatModel
from scenerag.llm.base import ChatResponse, GenerationTimings, Message, Usage
from scenerag.store import CypherStore

LIGHT_NEAR_BIKE = (
    "MATCH (l:Object {class: 'light'}), (b:Object {class: 'bicycle'}) "
    "RETURN l.nodeSymbol ORDER BY point.distance(l.center, b.center) LIMIT 1"
)


store = hydra_store_fixture("candidates")


# -- votes -------------------------------------------------------------------------------------------------
def test_the_best_grade_wins_then_the_most_shared_answer() -> None:
    failed = Outcome("a", grade=Grade.FAILED)
    empty = Outcome("b", answer="<>", grade=Grade.EMPTY)
    first = Outcome("c", answer="<O1, O2>", grade=Grade.OK)
    other = Outcome("d", answer="<O3>", grade=Grade.OK)
    same = Outcome("e", answer="<O2, o1>", grade=Grade.OK)  # a set in another order and case: the same answer
    assert vote([failed, empty]) is empty
    assert vote([failed, first, other]) is first  # a tie: the earliest (the greedy reply)
    assert vote([other, first, same]) is first  # two of three agree
    assert vote([]) is None
    assert normal_answer("[O1, O2]") != normal_answer("[O2, O1]")  # a list keeps its order
    assert normal_answer("4.201") == normal_answer("4.2")


def test_a_failing_greedy_query_is_outvoted_by_samples_of_the_same_prompt(store: CypherStore) -> None:
    good = "MATCH (o:Object) RETURN count(o)"
    agent, model = scripted_agent(store, ["MATCH (o:Object RETURN count(o)", good, good], candidates=3)
    result = agent.run("How many objects are there?", answer_type="number")
    assert result.answer == "65"
    assert [c.temperature for c in model.calls] == [0.0, 0.7, 0.7]
    assert all(len(c.messages) == 2 for c in model.calls)  # sampled again, not corrected
    assert [c["grade"] for c in result.context["candidates"]] == ["failed", "ok", "ok"]


def test_always_voting_takes_the_majority(store: CypherStore) -> None:
    seats = "MATCH (o:Object {class: 'seating'}) RETURN count(o)"
    signs = "MATCH (o:Object {class: 'sign'}) RETURN count(o)"
    agent, model = scripted_agent(store, [signs, seats, seats], candidates=3, vote="always")
    result = agent.run("How many seats are there?", answer_type="number")
    assert result.answer == _one(store, seats.replace("count(o)", "count(o) AS n")) and len(model.calls) == 3


def test_a_doubted_query_written_again_after_being_told_is_taken(store: CypherStore) -> None:
    every = "MATCH (o:Object {class: 'sign'}) RETURN count(o)"  # ignores "in the lounge"
    agent, model = scripted_agent(store, [every, every])
    result = agent.run("How many signs are in the lounge?", answer_type="number")
    assert "does not use it" in model.calls[1].messages[-1].content
    assert result.answer == _one(store, every) and len(model.calls) == 2
    assert any("kept" in note for note in result.context.get("rewrites", []))


# -- plans -------------------------------------------------------------------------------------------------
def test_plans_parse_and_their_grammar_allows_only_plans() -> None:
    reply = "1. Which light is closest to the bike? 2. Which room is #1 in?"
    assert parse_plan(reply) == Plan(("Which light is closest to the bike?", "Which room is #1 in?"))
    assert parse_plan("one step") == Plan(()) and parse_plan("one step").single
    assert parse_plan("1. Which light? 2. Which room?") is None  # the later step never uses #1
    assert parse_plan("MATCH (n) RETURN n") is None
    assert PLAN_GRAMMAR.accepts(reply) and PLAN_GRAMMAR.accepts("one step")
    assert not PLAN_GRAMMAR.accepts("1. Which light is closest? 2. Which room is it in?")
    assert not PLAN_GRAMMAR.accepts("Sure! Here is the plan.")
    # a step ends at "?", "." or ":", so the next step's number cannot become part of it; numbers go on
    said = "1. Find the room where the bike is: 2. Which seats are within 0.5 m of #1?"
    assert PLAN_GRAMMAR.accepts(said) and parse_plan(said) == Plan(
        ("Find the room where the bike is:", "Which seats are within 0.5 m of #1?")
    )
    assert PLAN_GRAMMAR.accepts("1. Find the room of O43. 2. How many seats are in #1?")
    assert not PLAN_GRAMMAR.accepts("1. Find the room: 2. 2. Which seats are in #1?")
    assert not PLAN_GRAMMAR.accepts("1. Which is R5.10.10 in? 2. Which room is #1?")


def test_a_plan_that_is_no_decomposition_is_refused() -> None:
    question = "Which room is O98 in?"
    assert plan_problem(Plan((question, "Which room is #1 in?")), question)
    assert plan_problem(Plan(("Which room is O12 in?", "Which room is #1 in?")), "In what room is the couch?")
    ok = Plan(("Which light is closest to the bike?", "Which room is #1 in?"))
    assert plan_problem(ok, "Which room is the light closest to the bike in?") is None


def test_a_question_the_first_round_cannot_answer_is_planned(store: CypherStore) -> None:
    light = _one(store, LIGHT_NEAR_BIKE)
    room_query = (
        f"MATCH (r:Room)-[:CONTAINS*]->(o:Object {{nodeSymbol: '{light}'}}) RETURN DISTINCT r.nodeSymbol"
    )
    room = _one(store, room_query)
    agent, model = scripted_agent(
        store,
        [
            LIGHT_NEAR_BIKE,  # the light itself for "which room": another layer, doubted
            "1. Which light is closest to the bike? 2. Which room is #1 in?",
            LIGHT_NEAR_BIKE,
            room_query,
        ],
        plan=True,
        measure_form=False,  # the distance form is tried before a plan (tests/test_measure_form.py)
    )
    question = "Which room is the light closest to the bike in?"
    result = agent.run(question, answer_type="string")
    assert sldp_equal(result.answer, room) and result.question == question
    steps = result.context["steps"]
    assert steps[0]["answer"] == f"<{light}>" and steps[1]["question"] == f"Which room is {light} in?"
    assert f"Q: Which room is {light} in?" in model.calls[3].messages[-1].content
    assert model.calls[1].grammar is None  # a scripted model cannot follow a grammar: none is sent
    assert result.llm_calls == 4 and len(result.tools) == 3  # the first attempt and the plan both count


def test_a_refused_plan_goes_back_to_correcting_the_query(store: CypherStore) -> None:
    light = _one(store, LIGHT_NEAR_BIKE)
    room_query = (
        f"MATCH (r:Room)-[:CONTAINS*]->(o:Object {{nodeSymbol: '{light}'}}) RETURN DISTINCT r.nodeSymbol"
    )
    question = "Which room is the light closest to the bike in?"
    agent, model = scripted_agent(
        store,
        [LIGHT_NEAR_BIKE, f"1. {question} 2. Which room is #1 in?", room_query, room_query],
        plan=True,
        measure_form=False,
    )
    result = agent.run(question, answer_type="string")
    assert sldp_equal(result.answer, _one(store, room_query)) and "steps" not in result.context
    assert result.context["plan_tried"] == [[question, "Which room is #1 in?"]]
    assert "asks which room" in model.calls[2].messages[-1].content  # the correction after the plan
    # the room's query names the light by its symbol, not the classes the question uses: doubted, then kept
    assert "does not use it" in model.calls[3].messages[-1].content


def test_a_plan_whose_last_step_answers_another_layer_is_refused(store: CypherStore) -> None:
    light = _one(store, LIGHT_NEAR_BIKE)
    place_query = f"MATCH (p:MeshPlace)-[:CONTAINS]->(o:Object {{nodeSymbol: '{light}'}}) RETURN p.nodeSymbol"
    question = "Which light is closest to the bike?"
    agent, _ = scripted_agent(
        store,
        [
            "MATCH (l:Object {class: 'light'}) RETURN l.nodeSymbol LIMIT 1",  # ignores the bike: doubted
            "1. Which light is closest to the bike? 2. Which mesh place is #1 on?",  # a step too many
            LIGHT_NEAR_BIKE,
            place_query,
            LIGHT_NEAR_BIKE,
        ],
        plan=True,
        measure_form=False,
    )
    result = agent.run(question, answer_type="string")
    assert result.context["plan_tried"] and "steps" not in result.context
    assert sldp_equal(result.answer, light)  # the plan's mesh place is no light: the corrected query answers


# -- words ------------------------------------------------------------------------------------------------
def test_the_language_is_data(tmp_path: Path) -> None:
    words = load_words()
    assert words.lexicon["couch"][0] == "seating" and "the" in words.stop
    assert words.is_yes_no("Are R1 and R5 connected?") and not words.is_yes_no("Is there a bag? Which one?")
    assert words.is_yes_no("Can the robot get from R1 to R4 without R2, yes or no")
    assert not words.is_yes_no("Which rooms have no chairs?")
    assert words.is_yes_no("Hey, just visiting - is there a bike anywhere?")  # a dash ends a clause too
    assert not words.is_yes_no("Which room - the one with the bike - is largest?")
    assert words.join(["R2", "R3", "R5"]) == "R2, R3 and R5" and words.yes_no(False) == "no"
    extra = tmp_path / "site.yaml"
    extra.write_text("lexicon:\n  couch: [sofa]\n  pouffe: [seating]\n")
    site = load_words("en", [extra])
    assert site.lexicon["couch"] == ("sofa",) and site.lexicon["pouffe"] == ("seating",)
    bad = tmp_path / "bad.yaml"
    bad.write_text("stop: [a, no]\n")  # YAML reads an unquoted no as false
    with pytest.raises(WordsError, match="quote"):
        load_words("en", [bad])
    with pytest.raises(WordsError, match="no words for language"):
        load_words("xx")
    assert words.word_forms("shelves")[:2] == ["shelves", "shelf"] and "box" in words.word_forms("boxes")
    endings = tmp_path / "endings.yaml"
    endings.write_text("singular_endings: [[ies, y], [ves]]\n")
    with pytest.raises(WordsError, match=r"endings\.yaml: singular_endings"):
        load_words("en", [endings])


# -- repairs of forms that cannot mean anything ------------------------------------------------------------
def test_a_pattern_written_as_an_argument_is_matched_first(store: CypherStore) -> None:
    written = (
        "MATCH (r:Room)-[:CONTAINS*]->(o:Object {class: 'box'}) WITH r, point.distance(o.center, "
        "(s:Object {nodeSymbol: 'O264'})) AS d ORDER BY d LIMIT 1 RETURN r.nodeSymbol"
    )
    fixed, notes = inline_patterns(written)
    assert fixed.startswith("MATCH (s:Object {nodeSymbol: 'O264'}), (r:Room)") and notes
    assert "point.distance(o.center, s.center)" in fixed
    nearest_box_room = _one(
        store,
        "MATCH (s:Object {nodeSymbol: 'O264'}), (r:Room)-[:CONTAINS*]->(o:Object {class: 'box'}) "
        "RETURN r.nodeSymbol AS room ORDER BY point.distance(o.center, s.center) LIMIT 1",
    )
    assert _one(store, fixed) == nearest_box_room
    bound = "MATCH (s:Object {nodeSymbol: 'O264'}) RETURN point.distance((s:Object).center, s.center)"
    assert inline_patterns(bound) == (bound, [])  # s has a pattern of its own: left to the check


def test_a_spent_time_budget_starts_no_new_round(store: CypherStore) -> None:
    broken = "MATCH (o:Object RETURN count(o)"
    agent, model = scripted_agent(store, [broken, "MATCH (o:Object) RETURN count(o)"], time_budget_s=0.0)
    result = agent.run("How many objects are there?", answer_type="number")
    assert len(model.calls) == 1 and result.context["out_of_time"]  # no correction (an example may answer)
    agent, model = scripted_agent(store, [broken, "MATCH (o:Object) RETURN count(o)"])
    assert agent.run("How many objects are there?", answer_type="number").answer == "65"


def test_true_or_false_where_nodes_are_asked_for_is_sent_back(store: CypherStore) -> None:
    """ "Which signs are in the hallways?" answered by whether any is (blind BJ-19): the set hint makes it a
    shape mismatch, so the model is asked again and its second query answers."""
    whether = "MATCH (r:Room {class: 'hallway'})-[:CONTAINS*]->(o:Object {class: 'sign'}) RETURN count(o) > 0"
    which = "MATCH (r:Room {class: 'hallway'})-[:CONTAINS*]->(o:Object {class: 'sign'}) RETURN DISTINCT o.nodeSymbol"
    agent, model = scripted_agent(store, [whether, which])
    result = agent.run("Which signs are in the hallways?", answer_type="set")
    assert len(model.calls) == 2 and "true/false" in str(model.calls[1])
    assert sldp_equal(result.answer, "<O36, O39, O63, O95>")


def _timed_reply(text: str, prompt_tokens: int, steps: int) -> ChatResponse:
    """A reply as a local model gives it: with the prompt tokens it evaluated and its decode steps."""
    timings = GenerationTimings(prompt_tokens, 0.01, steps, 0.01)
    return ChatResponse(Message.assistant(text), Usage(prompt_tokens, steps), "local", "stop", 0.02, timings)


def test_a_spent_work_budget_starts_no_new_round_whatever_the_wall_time(store: CypherStore) -> None:
    """The work budget counts a call's tokens at the reference rates, not its wall time: a call that took
    0.02 s but evaluated 1,100 prompt tokens and decoded 180 steps (0.4 + 20 + 10 reference seconds) spends
    a 20 s budget; the same call with 110 tokens and 18 steps (2.4 s) leaves room for the correction."""
    broken = "MATCH (o:Object RETURN count(o)"
    fixed = "MATCH (o:Object) RETURN count(o)"
    heavy = [_timed_reply(broken, 1100, 180), _timed_reply(fixed, 110, 18)]
    agent, model = scripted_agent(store, heavy, work_budget_s=20.0)
    result = agent.run("How many objects are there?", answer_type="number")
    assert len(model.calls) == 1 and result.context["out_of_time"] == "work"
    assert result.context["timings_s"]["work"] >= 30.0
    light = [_timed_reply(broken, 110, 18), _timed_reply(fixed, 110, 18)]
    agent, model = scripted_agent(store, light, work_budget_s=20.0)
    result = agent.run("How many objects are there?", answer_type="number")
    assert len(model.calls) == 2 and result.answer == "65" and "out_of_time" not in result.context
    assert 4.8 <= result.context["timings_s"]["work"] < 20.0


def test_work_rates_count_a_batch_by_its_decode_steps() -> None:
    rates = WorkRates(prompt_tps=50.0, decode_tps=10.0, call_s=0.0)
    batch = GenerationTimings(500, 9.9, 60, 9.9, decode_steps=20)  # three candidates of 20 tokens each
    first = ChatResponse(Message.assistant("a"), Usage(500, 20), "local", "stop", 5.0, batch)
    rest = [ChatResponse(Message.assistant(t), Usage(0, 20), "local", "stop", 5.0) for t in "bc"]
    assert rates.of([first, *rest], wall_s=5.0) == pytest.approx(10.0 + 2.0)  # not 3 x 20 tokens
    endpoint = ChatResponse(Message.assistant("a"), Usage(500, 20), "gpt", "stop", 1.5)
    assert rates.of([endpoint], wall_s=1.7) == 1.7  # no token timings: the call's own wall time
    metered = MeteredModel(ScriptedChatModel([first]), rates)
    metered.chat([Message.user("q")])
    assert metered.work_s == pytest.approx(12.0) and metered.wall_s < 1.0
    metered.reset()
    assert metered.work_s == metered.wall_s == 0.0


def test_a_number_asked_of_something_absent_is_zero(store: CypherStore) -> None:
    """Nodes listed for "how many" where nothing matches count 0; a measure of nothing stays not found."""
    absent = "MATCH (o:Object {class: 'flora'}) RETURN o.nodeSymbol"
    agent, _ = scripted_agent(store, [absent])
    result = agent.run("How many potted plants are there?", answer_type="number")
    assert result.answer == "0"
    measure = "MATCH (a:Object {class: 'flora'}), (b:Object {nodeSymbol: 'O43'}) RETURN point.distance(a.center, b.center)"
    agent, _ = scripted_agent(store, [measure])
    assert agent.run("How far is the plant from the bike?", answer_type="number").answer != "0"


def test_a_node_answer_is_said_in_the_words_the_question_offers(store: CypherStore) -> None:
    """ "Just answer bed or bicycle": the one node the query answers with is said as the offered class word;
    without offered words, or with a node of another class, the symbol stays."""
    words = load_words()
    assert words.offered_answers(
        "Is the bag closer to the bed or to the bicycle? Just answer bed or bicycle."
    ) == (
        "bed",
        "bicycle",
    )
    assert words.offered_answers("Which is closer? Answer with the object id.") == ()
    nearer = (
        "MATCH (a:Object {class: 'bag'}), (b:Object) WHERE b.class IN ['bed', 'bicycle'] "
        "RETURN b.nodeSymbol ORDER BY point.distance(a.center, b.center) LIMIT 1"
    )
    symbol = _one(store, nearer)
    agent, _ = scripted_agent(store, [nearer])
    result = agent.run("Is the bag closer to the bed or to the bicycle? Just answer bed or bicycle.")
    assert result.answer == _one(store, f"MATCH (n {{nodeSymbol: '{symbol}'}}) RETURN n.class")
    agent, _ = scripted_agent(store, [nearer])
    result = agent.run("Which is closer to the bag, the bed or the bicycle? Give the object id.")
    assert result.answer == symbol


def test_the_phrase_a_question_word_opens_says_whether_it_asks_a_kind(store: CypherStore) -> None:
    words = load_words()
    assert words.asked_phrase("What's the most common object class in R1?") == [
        "the",
        "most",
        "common",
        "object",
        "class",
    ]
    assert words.asked_phrase("Which room has the most kinds of objects?") == ["room"]
    assert words.asked_phrase("Is there a bed?") == []
    agent, _ = scripted_agent(store, [])
    assert agent._asks_kind("In whichever room holds the most objects, what's the most common object class?")
    assert agent._asks_kind("More trash or more boxes? answer with the class name")
    assert not agent._asks_kind("Which room has the most kinds of objects?")
    assert agent._asks_ids("Is the bag nearer to O8 or to O275? Answer with the id.")
    assert not agent._asks_ids("Where is the object with id O12?")  # the id names a node
    assert not agent._asks_ids("How many ids does R1 hold?")


def test_a_figure_for_a_question_asking_for_ids_is_doubted(store: CypherStore) -> None:
    """A distance where the question asks for the id of the nearer node: no query holds up, so the next
    one (the node itself) answers."""
    figure = "MATCH (a:Object {class: 'bag'}), (b:Object {class: 'food'}) RETURN point.distance(a.center, b.center)"
    node = (
        "MATCH (a:Object {class: 'bag'}), (b:Object) WHERE b.nodeSymbol IN ['O8', 'O275'] "
        "RETURN b.nodeSymbol ORDER BY point.distance(a.center, b.center) LIMIT 1"
    )
    agent, model = scripted_agent(store, [figure, "measure: none", node])  # the distance form declines
    result = agent.run("Is the bag nearer to O8 or to O275? Answer with the id.")
    assert result.answer == _one(store, node)
    assert "asks for node ids" in model.calls[-1].messages[-1].content


def test_the_class_of_another_layer_for_a_which_layer_question_is_doubted(store: CypherStore) -> None:
    """ "The sign O95 - what room or rooms is it part of?" answered with O95's own class: doubted, so the
    rooms that hold it answer."""
    own_class = "MATCH (o:Object {nodeSymbol: 'O95'})-[:CONTAINS*]-(:Room) RETURN DISTINCT o.class"
    rooms = "MATCH (r:Room)-[:CONTAINS*]->(o:Object {nodeSymbol: 'O95'}) RETURN DISTINCT r.nodeSymbol"
    agent, model = scripted_agent(store, [own_class, rooms])
    result = agent.run("The sign O95 - what room or rooms is it part of?")
    assert sldp_equal(
        result.answer, "<" + ", ".join(r["r.nodeSymbol"] for r in store.query(rooms).rows) + ">"
    )
    assert "returns the class of Object nodes" in model.calls[-1].messages[-1].content
    # a kind asked for: the class answers
    agent, _ = scripted_agent(store, [own_class])
    assert agent.run("What kind of object is O95?", answer_type="string").answer == _one(store, own_class)


def test_rooms_that_connect_to_a_room_are_its_neighbours(store: CypherStore) -> None:
    """ "connect to" between two rooms means their own edge: a query that never follows it is doubted."""
    agent, _ = scripted_agent(store, [])
    links = agent.linker().link("Of the rooms that connect to R3, which one contains more objects?")
    connection = agent._connection("Of the rooms that connect to R3, which one contains more objects?", links)
    assert connection is not None and connection[2] == "ROOM_CONNECTED"


def test_forms_that_cannot_mean_anything_are_rewritten(store: CypherStore) -> None:
    fixed, notes = center_arguments(
        "MATCH (a:Object {nodeSymbol: 'O43'}), (b:Object) RETURN point.distance((a.center.x, a.center.y, 0), "
        "b.center)"
    )
    assert "point.distance(a.center, b.center)" in fixed and notes
    union = (
        "MATCH (r:Room {nodeSymbol: 'R5'})-[:CONTAINS*]->(o:Object) RETURN count(o) UNION "
        "MATCH (r:Room {nodeSymbol: 'R2'})-[:CONTAINS*]->(o:Object) RETURN count(o)"
    )
    fixed, notes = merge_union_by_symbol(union)
    assert "UNION" not in fixed and "['R5', 'R2']" in fixed and notes
    both = _one(
        store,
        "MATCH (r:Room)-[:CONTAINS*]->(o:Object) WHERE r.nodeSymbol IN ['R5', 'R2'] RETURN count(o) AS n",
    )
    assert _one(store, fixed) == both


def test_forms_that_break_a_query_the_model_meant(store: CypherStore) -> None:
    # a path's length asked of a path never bound: the shortest path of the one variable-length pattern
    fixed, notes = bind_path_variable(
        "MATCH (a:MeshPlace {nodeSymbol: 'P1424'})-[:MESH_PLACE_CONNECTED*..200]-(b:MeshPlace "
        "{nodeSymbol: 'P6219'}) RETURN length(s)"
    )
    assert notes and "MATCH s = shortestPath((a:MeshPlace" in fixed
    assert _one(store, fixed) == _one(
        store,
        "MATCH (a:MeshPlace {nodeSymbol: 'P1424'}), (b:MeshPlace {nodeSymbol: 'P6219'}) "
        "MATCH s = shortestPath((a)-[:MESH_PLACE_CONNECTED*..200]-(b)) RETURN length(s)",
    )
    bound = "MATCH s = shortestPath((a:MeshPlace)-[:MESH_PLACE_CONNECTED*..9]-(b:MeshPlace)) RETURN length(s)"
    assert bind_path_variable(bound) == (bound, [])
    # a WITH computing nothing used later that drops a variable used later
    fixed, notes = drop_idle_with(
        "MATCH (r:Room {class: 'lounge'})-[:CONTAINS*]->(p:MeshPlace) WITH r, count(DISTINCT p) AS n "
        "WHERE EXISTS { MATCH (p)-[:CONTAINS]->(:Object {class: 'seating'}) } RETURN count(DISTINCT p)"
    )
    assert notes and "WITH" not in fixed and int(_one(store, fixed)) > 0
    used = "MATCH (r:Room)-[:CONTAINS*]->(p:MeshPlace) WITH r, count(DISTINCT p) AS n RETURN r.nodeSymbol, n"
    assert drop_idle_with(used) == (used, [])
