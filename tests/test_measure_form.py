"""The distance form: slots decoded under a grammar of the live graph, compiled to Cypher here. The model
fills it only when its first queries measured distances and none held up; a reference query never needs it."""

from __future__ import annotations

import dataclasses

import pytest

from conftest import hydra_store_fixture, scripted_agent, symbols_of_class
from scenerag import SceneGraph
from scenerag.agents.measure_form import NONE_FORM, MeasureForm, MeasureForms, measures_distance, parse_form
from scenerag.agents.words import load_words
from scenerag.store import CypherStore

NEAREST_TRASH = (
    "find: Object; class: trash; in: -; from: bicycle; from in: -; rank: nearest; within: -; answer: id"
)


store = hydra_store_fixture("form")


@pytest.fixture(scope="module")
def forms(store: CypherStore) -> MeasureForms:
    return MeasureForms(store, load_words())


def test_a_form_parses_and_renders_back() -> None:
    form = parse_form(NEAREST_TRASH)
    assert form == MeasureForm("Object", "trash", None, "bicycle", None, "nearest", None, "id")
    assert form.render() == NEAREST_TRASH
    assert parse_form(NONE_FORM) is None
    assert parse_form("find: Object; class: trash") is None  # not a whole form
    assert parse_form(NEAREST_TRASH.replace("nearest", "closest")) is None


def test_the_grammar_holds_only_the_graphs_layers_classes_and_rooms(forms: MeasureForms) -> None:
    g = forms.grammar
    assert g.accepts(NEAREST_TRASH) and g.accepts(NONE_FORM)
    assert not g.accepts(NEAREST_TRASH.replace("class: trash", "class: toilet"))  # no such class
    assert not g.accepts(NEAREST_TRASH.replace("class: trash", "class: lounge"))  # a room class on objects
    assert not g.accepts(NEAREST_TRASH.replace("; in: -", "; in: R99"))  # no such room
    assert g.accepts(NEAREST_TRASH.replace("; in: -", "; in: R2").replace("within: -", "within: 1.5"))
    # every worked example in the prompt is one the grammar accepts
    shown = [line[len("Form: ") :] for line in forms.system.splitlines() if line.startswith("Form: ")]
    assert len(shown) >= 6 and all(g.accepts(f) for f in shown)


def test_compiled_queries_answer_from_the_graph(
    forms: MeasureForms, store: CypherStore, hydra_graph: SceneGraph
) -> None:
    (bike,) = symbols_of_class(hydra_graph, "bicycle")
    q = forms.compile(parse_form(NEAREST_TRASH))  # type: ignore[arg-type]
    assert q is not None and measures_distance(q)
    (nearest,) = [next(iter(r.values())) for r in store.query(q).rows]
    # the same by hand: the trash can with the smallest distance to the bicycle
    rows = store.query(
        "MATCH (t:Object {class: 'trash'}), (b:Object {nodeSymbol: $b}) "
        "RETURN t.nodeSymbol AS s, point.distance(t.center, b.center) AS d ORDER BY d",
        {"b": bike},
    ).rows
    assert nearest == rows[0]["s"]
    count = MeasureForm("Object", "any", None, bike, None, "none", 3.0, "count")
    (n,) = store.query(forms.compile(count)).rows[0].values()  # type: ignore[arg-type]
    by_hand = store.query(
        "MATCH (o:Object), (b {nodeSymbol: $b}) WHERE o <> b AND point.distance(o.center, b.center) <= 3 "
        "RETURN count(o) AS n",
        {"b": bike},
    ).rows[0]["n"]
    assert n == by_hand
    # a list answer keeps the ranking whole, nearest first, whatever the form's answer slot says
    ordered = forms.compile(dataclasses.replace(parse_form(NEAREST_TRASH), answer="distance"), ordered=True)  # type: ignore[arg-type]
    assert ordered is not None and [next(iter(r.values())) for r in store.query(ordered).rows] == [
        r["s"] for r in rows
    ]
    # what the graph lacks compiles to nothing
    assert forms.compile(MeasureForm("Object", "any", None, "O999999", None, "nearest", None, "id")) is None
    assert forms.compile(MeasureForm("Object", "toilet", None, bike, None, "nearest", None, "id")) is None
    assert forms.compile(MeasureForm("Object", "any", "R99", bike, None, "nearest", None, "id")) is None
    # a form that ranks nothing and bounds nothing measures nothing ("which room is the bike in")
    assert forms.compile(MeasureForm("Room", "any", None, bike, None, "none", None, "id")) is None
    assert forms.compile(MeasureForm("Object", "any", None, bike, None, "none", None, "distance")) is not None


def test_the_agent_fills_the_form_when_a_measuring_query_does_not_hold_up(
    store: CypherStore, hydra_graph: SceneGraph
) -> None:
    (bike,) = symbols_of_class(hydra_graph, "bicycle")
    echo = (
        "MATCH (t:Object {class: 'trash'}), (b:Object {class: 'bicycle'}) "
        "RETURN b.nodeSymbol ORDER BY point.distance(t.center, b.center) LIMIT 1"
    )
    agent, model = scripted_agent(store, [echo, NEAREST_TRASH])
    result = agent.run("Which bin is nearest to the bike?", answer_type="string")
    nearest = store.query(agent.measure_forms().compile(parse_form(NEAREST_TRASH))).rows[0]  # type: ignore[arg-type]
    assert result.answer == next(iter(nearest.values())) != bike
    assert model.calls[1].messages[0].content == agent.measure_forms().system
    assert result.context["form"] == NEAREST_TRASH
    # the model says the question measures nothing: the correction round goes on as before
    agent, model = scripted_agent(store, [echo, NONE_FORM, echo])
    assert agent.run("Which bin is nearest to the bike?", answer_type="string").answer == bike
    assert len(model.calls) == 3
    # a query that holds up never asks for the form
    agent, model = scripted_agent(store, [agent.measure_forms().compile(parse_form(NEAREST_TRASH))])  # type: ignore[arg-type]
    agent.run("Which bin is nearest to the bike?", answer_type="string")
    assert len(model.calls) == 1


def test_off_or_without_distances_the_form_is_never_asked(store: CypherStore) -> None:
    wrong = "MATCH (r:Room {class: 'lounge'}) RETURN r.nodeSymbol"
    agent, model = scripted_agent(store, [wrong, wrong])
    agent.run("If I walk out of the lounge, which room am I in?", answer_type="string")
    assert all(not c.messages[0].content.startswith(load_words().measure_intro[:40]) for c in model.calls)
    echo = (
        "MATCH (t:Object {class: 'trash'}), (b:Object {class: 'bicycle'}) "
        "RETURN b.nodeSymbol ORDER BY point.distance(t.center, b.center) LIMIT 1"
    )
    agent, model = scripted_agent(store, [echo, echo], measure_form=False)
    agent.run("Which bin is nearest to the bike?", answer_type="string")
    assert len(model.calls) == 2 and "form" not in model.calls[1].messages[0].content.lower()[:60]


def test_a_form_measuring_from_a_class_uses_the_member_the_question_names(
    store: CypherStore, hydra_graph: SceneGraph
) -> None:
    """ "within 3 m of trash can O30": a form naming the class is measured from O30 (the link), not from
    every trash can."""
    can = symbols_of_class(hydra_graph, "trash")[0]
    empty = (
        f"MATCH (x:Object {{class: 'bed'}}), (ref:Object {{nodeSymbol: '{can}'}}) "
        "WHERE point.distance(x.center, ref.center) < 3 RETURN count(DISTINCT x)"
    )
    form = "find: Object; class: any; in: -; from: trash; from in: -; rank: none; within: 3; answer: count"
    agent, _ = scripted_agent(store, [empty, form])
    result = agent.run(f"how many other objects are within 3 m of trash can {can}", answer_type="number")
    by_hand = store.query(
        "MATCH (o:Object), (t {nodeSymbol: $t}) WHERE o <> t AND point.distance(o.center, t.center) <= 3 "
        "RETURN count(o) AS n",
        {"t": can},
    ).rows[0]["n"]
    assert by_hand > 0 and result.answer == str(by_hand)
    assert any(f"from: {can}" in note for note in result.context.get("rewrites", []))


def test_a_form_finding_the_class_of_its_only_reference_finds_any_other_node(
    store: CypherStore, hydra_graph: SceneGraph
) -> None:
    """ "what is closest to the bicycle" filled as "find: Object; class: bicycle; from: bicycle": no other
    bicycle exists, so the nearest node of any class is meant."""
    (bike,) = symbols_of_class(hydra_graph, "bicycle")
    echo = (
        "MATCH (x:Object {class: 'bicycle'}), (ref:Object) WHERE x <> ref "
        "RETURN x.nodeSymbol ORDER BY point.distance(x.center, ref.center) LIMIT 1"
    )
    form = (
        "find: Object; class: bicycle; in: -; from: bicycle; from in: -; rank: nearest; within: -; answer: id"
    )
    agent, _ = scripted_agent(store, [echo, form, echo, echo])
    result = agent.run("what object is closest to the bicycle?", answer_type="string")
    nearest = store.query(
        "MATCH (o:Object), (b {nodeSymbol: $b}) WHERE o <> b RETURN o.nodeSymbol AS s "
        "ORDER BY point.distance(o.center, b.center) LIMIT 1",
        {"b": bike},
    ).rows[0]["s"]
    assert result.answer == nearest != bike


def test_a_form_class_the_question_never_names_is_no_filter(
    store: CypherStore, hydra_graph: SceneGraph
) -> None:
    """ "what object is sitting closest to my bag" filled with "class: seating" (no word of the question
    links to it): the nearest node of any class is meant."""
    (bag,) = symbols_of_class(hydra_graph, "bag")
    echo = (
        "MATCH (x:Object {class: 'bag'}), (ref:Object) WHERE x <> ref "
        "RETURN x.nodeSymbol ORDER BY point.distance(x.center, ref.center) LIMIT 1"
    )
    form = "find: Object; class: seating; in: -; from: bag; from in: -; rank: nearest; within: -; answer: id"
    agent, _ = scripted_agent(store, [echo, form, echo, echo])
    result = agent.run("I left my bag here. What object is sitting closest to it?", answer_type="string")
    nearest = store.query(
        "MATCH (o:Object), (b {nodeSymbol: $b}) WHERE o <> b RETURN o.nodeSymbol AS s, o.class AS c "
        "ORDER BY point.distance(o.center, b.center) LIMIT 1",
        {"b": bag},
    ).rows[0]
    assert nearest["c"] != "seating" and result.answer == nearest["s"]


def test_the_form_is_asked_before_a_plan(store: CypherStore, hydra_graph: SceneGraph) -> None:
    """A plan costs a call per step; the form one short reply: with both allowed, the form goes first and a
    form that holds up leaves no plan to ask for."""
    (bike,) = symbols_of_class(hydra_graph, "bicycle")
    echo = (
        "MATCH (t:Object {class: 'trash'}), (b:Object {class: 'bicycle'}) "
        "RETURN b.nodeSymbol ORDER BY point.distance(t.center, b.center) LIMIT 1"
    )
    agent, model = scripted_agent(store, [echo, NEAREST_TRASH], plan=True)
    result = agent.run("Which bin is nearest to the bike?", answer_type="string")
    assert result.answer != bike and result.context["form"] == NEAREST_TRASH
    assert len(model.calls) == 2 and "steps" not in result.context
