"""The compare form: two sides, one measure and what to answer, decoded under a grammar of the live graph and
compiled to Cypher here. The model fills it when its first query (or the nearest worked example) compares two
values; a form that holds up is preferred over the model's own query, whose sides a small model swaps."""

from __future__ import annotations

import dataclasses

import pytest

from conftest import hydra_store_fixture, scripted_agent, symbols_of_class
from scenerag import SceneGraph
from scenerag.agents.compare_form import (
    NONE_COMPARE,
    CompareForm,
    CompareForms,
    as_asked,
    compares_two,
    parse_compare,
)
from scenerag.agents.measure_form import MeasureForms
from scenerag.agents.words import load_words
from scenerag.store import CypherStore

SEATS = "compare: lounge; with: {room}; measure: count Object seating; answer: {answer}"

store = hydra_store_fixture("compare")


@pytest.fixture(scope="module")
def forms(store: CypherStore) -> CompareForms:
    words = load_words()
    return CompareForms(MeasureForms(store, words), words)


def _value(store: CypherStore, query: str | None) -> object:
    assert query is not None
    (row,) = store.query(query).rows
    return next(iter(row.values()))


def _by_symbol(store: CypherStore, match: str, value: str, *symbols: str) -> dict[str, float]:
    """``value`` (an expression of ``o``) for each of ``symbols``, by hand."""
    rows = store.query(
        f"{match} WHERE o.nodeSymbol IN $s RETURN o.nodeSymbol AS s, {value} AS v", {"s": list(symbols)}
    ).rows
    return {r["s"]: r["v"] for r in rows}


def _seats(store: CypherStore, where: str) -> int:
    return int(
        store.query(
            f"MATCH (r:Room) WHERE {where} MATCH (r)-[:CONTAINS*]->(o:Object {{class: 'seating'}}) "
            "RETURN count(DISTINCT o) AS n"
        ).rows[0]["n"]
    )


def test_a_form_parses_and_renders_back() -> None:
    text = SEATS.format(room="R5", answer="more?")
    form = parse_compare(text)
    assert form == CompareForm("lounge", "R5", "count Object seating", "more?")
    assert form.render() == text
    assert parse_compare(NONE_COMPARE) is None
    assert parse_compare("compare: lounge; with: R5") is None  # not a whole form
    assert parse_compare(text.replace("more?", "bigger")) is None  # no such answer


def test_the_answer_kind_follows_what_the_question_asks() -> None:
    form = CompareForm("sign", "storage", "members", "more?")
    assert as_asked(form, yes_no=False).answer == "larger"  # "more signs or more storage? tell me which"
    assert as_asked(form, yes_no=True) == form
    assert as_asked(dataclasses.replace(form, answer="smaller"), yes_no=True).answer == "fewer?"
    assert as_asked(form, yes_no=False, number=True).answer == "difference"  # "how many more"
    assert as_asked(dataclasses.replace(form, answer="difference"), yes_no=True).answer == "difference"


def test_the_agent_asks_whether_only_without_an_alternative(store: CypherStore) -> None:
    agent, _ = scripted_agent(store, [])
    assert agent._asks_whether("Are there more signs than bins?")
    assert not agent._asks_whether("Are there more signs or more bins? Just tell me which.")
    assert not agent._asks_whether("Is the bed or the bike taller?")
    assert agent._asks_whether("Does R5 have more seats than R2 or R3? yes or no")


def test_what_compares_two_values_is_read_off_the_query() -> None:
    assert compares_two("MATCH (a) WITH count(a) AS na MATCH (b) WITH na, count(b) AS nb RETURN na > nb")
    assert compares_two("MATCH (a) WITH count(a) AS n1 RETURN CASE WHEN n1 > 2 THEN 'x' ELSE 'y' END")
    assert compares_two(
        "MATCH (o:Object) WHERE o.nodeSymbol IN ['O1', 'O2'] RETURN o.nodeSymbol ORDER BY o.center.z DESC LIMIT 1"
    )
    assert not compares_two(
        "MATCH (o:Object) WHERE o.center.z > 2 RETURN o.nodeSymbol"
    )  # a filter, not a comparison
    assert not compares_two(
        "MATCH (r:Room)-[:CONTAINS*]->(o) WITH r, count(o) AS n ORDER BY n DESC LIMIT 1 RETURN r"
    )
    # whether any exists ("is the bed in the lounge?"): a number on one side, no choice between two values
    assert not compares_two(
        "MATCH (:Room {class: 'lounge'})-[:CONTAINS*]->(o {class: 'bed'}) RETURN count(o) > 0"
    )
    assert not compares_two("MATCH (o:Object) RETURN count(o) >= 1.5")


def test_the_grammar_holds_only_the_graphs_classes_and_measures(forms: CompareForms) -> None:
    g = forms.grammar
    assert g.accepts(SEATS.format(room="R5", answer="more?")) and g.accepts(NONE_COMPARE)
    assert not g.accepts(
        SEATS.format(room="R5", answer="more?").replace("seating", "toilet")
    )  # no such class
    assert not g.accepts(SEATS.format(room="R5", answer="more?").replace("count Object", "count Floor"))
    assert not g.accepts("compare: kitchen; with: R5; measure: volume; answer: larger")  # no such class
    shown = [line[len("Form: ") :] for line in forms.system.splitlines() if line.startswith("Form: ")]
    assert len(shown) >= 7 and all(g.accepts(f) for f in shown)


def test_compiled_queries_answer_from_the_graph(
    forms: CompareForms, store: CypherStore, hydra_graph: SceneGraph
) -> None:
    lounge, r5 = _seats(store, "r.class = 'lounge'"), _seats(store, "r.nodeSymbol = 'R5'")
    assert lounge != r5
    compile_ = forms.compile
    assert _value(store, compile_(parse_compare(SEATS.format(room="R5", answer="more?")))) is (lounge > r5)  # type: ignore[arg-type]
    assert _value(store, compile_(parse_compare(SEATS.format(room="R5", answer="fewer?")))) is (lounge < r5)  # type: ignore[arg-type]
    assert _value(store, compile_(parse_compare(SEATS.format(room="R5", answer="difference")))) == lounge - r5  # type: ignore[arg-type]
    # "which": a class with one member answers that member's symbol
    (r1,) = [r["s"] for r in store.query("MATCH (r:Room {class: 'lounge'}) RETURN r.nodeSymbol AS s").rows]
    larger = _value(store, compile_(parse_compare(SEATS.format(room="R5", answer="larger"))))  # type: ignore[arg-type]
    assert larger == (r1 if lounge > r5 else "R5")
    # a class side with many members counts over all of them together
    hallways = _seats(store, "r.class = 'hallway'")
    together = compile_(CompareForm("lounge", "hallway", "count Object seating", "more?"))
    assert _value(store, together) is (lounge > hallways)
    # members of two classes: the class itself answers
    sizes = {c: len(symbols_of_class(hydra_graph, c)) for c in ("sign", "storage")}
    assert sizes["sign"] != sizes["storage"]
    which = _value(store, compile_(CompareForm("sign", "storage", "members", "larger")))
    assert which == max(sizes, key=sizes.__getitem__)
    # one node's measure: volume of the only bed against the only bicycle
    (bed,), (bike,) = symbols_of_class(hydra_graph, "bed"), symbols_of_class(hydra_graph, "bicycle")
    vols = _by_symbol(store, "MATCH (o:Object)", "o.bbox_dim[0] * o.bbox_dim[1] * o.bbox_dim[2]", bed, bike)
    bigger = _value(store, compile_(CompareForm("bed", "bicycle", "volume", "larger")))
    assert bigger == max(vols, key=vols.__getitem__)
    # distance from a third node: the only bag, or a symbol; never a class with many members
    dist = _by_symbol(
        store, "MATCH (o:Object), (g:Object {class: 'bag'})", "point.distance(o.center, g.center)", bed, bike
    )
    nearer = _value(store, compile_(CompareForm(bed, bike, "distance bag", "smaller")))
    assert nearer == min(dist, key=dist.__getitem__)
    assert compile_(CompareForm(bed, bike, "distance sign", "smaller")) is None
    # what the graph lacks, or a node measure of a class with many members, compiles to nothing
    assert compile_(CompareForm("O999999", "R5", "count Object any", "more?")) is None
    assert compile_(CompareForm("sign", "bed", "volume", "larger")) is None
    assert compile_(CompareForm("R5", "R5", "count Object any", "more?")) is None
    assert compile_(CompareForm("hallway", "R5", "count Object seating", "larger")) is None  # R5 is a hallway
    assert compile_(CompareForm(bed, bike, "count Object any", "more?")) is None  # objects hold no objects


def test_the_agent_prefers_the_form_over_a_query_with_swapped_sides(
    forms: CompareForms, store: CypherStore
) -> None:
    swapped = (
        "MATCH (r:Room {nodeSymbol: 'R5'}) OPTIONAL MATCH (r)-[:CONTAINS*]->(x:Object {class: 'seating'}) "
        "WITH count(DISTINCT x) AS na MATCH (l:Room {class: 'lounge'}) "
        "OPTIONAL MATCH (l)-[:CONTAINS*]->(y:Object {class: 'seating'}) WITH na, count(DISTINCT y) AS nb "
        "RETURN na > nb"
    )
    form = SEATS.format(room="R5", answer="more?")
    truth = _seats(store, "r.class = 'lounge'") > _seats(store, "r.nodeSymbol = 'R5'")
    agent, model = scripted_agent(store, [swapped, form], compare_form=True)
    result = agent.run("does the lounge have more seating than R5?", answer_type="boolean")
    assert result.answer == ("yes" if truth else "no")
    assert model.calls[1].messages[0].content == agent.compare_forms().system
    assert any("compare form" in note for note in result.context.get("rewrites", []))
    # the model says nothing is compared: its own query stands
    agent, model = scripted_agent(store, [swapped, NONE_COMPARE], compare_form=True)
    result = agent.run("does the lounge have more seating than R5?", answer_type="boolean")
    assert result.answer == ("no" if truth else "yes")
    assert len(model.calls) == 2
    # off: never asked
    agent, model = scripted_agent(store, [swapped], compare_form=False)
    agent.run("does the lounge have more seating than R5?", answer_type="boolean")
    assert len(model.calls) == 1


def test_a_query_that_compares_nothing_never_asks_for_the_form(store: CypherStore) -> None:
    agent, model = scripted_agent(
        store, ["MATCH (o:Object {class: 'seating'}) RETURN count(o)"], compare_form=True
    )
    agent.run("How many seats are there?", answer_type="number")
    assert len(model.calls) == 1


def test_two_named_nodes_and_a_ranking_of_their_whole_class_ask_for_the_form(store: CypherStore) -> None:
    """ "Which sign is higher, O3 or O264?" ranked every sign: the question names two nodes the query leaves
    out, so the form is asked, and it compares the two."""
    signs = [
        r["s"]
        for r in store.query(
            "MATCH (o:Object {class: 'sign'}) RETURN o.nodeSymbol AS s ORDER BY o.center.z DESC"
        ).rows
    ]
    low, mid = signs[-1], signs[-2]  # neither is the highest sign: the whole-class ranking answers neither
    ranked = "MATCH (o:Object {class: 'sign'}) RETURN o.nodeSymbol ORDER BY o.center.z DESC LIMIT 1"
    form = f"compare: {low}; with: {mid}; measure: z; answer: larger"
    agent, model = scripted_agent(store, [ranked, form], compare_form=True)
    result = agent.run(f"Which sign is mounted higher, {low} or {mid}?", answer_type="string")
    assert result.answer == mid and len(model.calls) == 2
    # a question naming no two nodes: the ranking stands, no second call
    agent, model = scripted_agent(store, [ranked], compare_form=True)
    assert agent.run("Which sign is mounted highest?", answer_type="string").answer == signs[0]
    assert len(model.calls) == 1


@pytest.mark.parametrize(
    ("question", "answer", "fixed"),
    [
        ("Which one sits higher up, the food or the bag?", "smaller", "larger"),
        ("Is the bed lower than the bike?", "more?", "fewer?"),
        ("Which is closer to R2: O8 or O9?", "larger", "smaller"),
        ("Which has more seating, R1 or R5?", "larger", "larger"),
        # no comparative, words both ways, or a difference: the model's answer stands
        ("Compare O8 and O9 by height: which one?", "smaller", "smaller"),
        ("Which one is nearer, and higher?", "smaller", "smaller"),
        ("How many more chairs does R1 have than R5?", "difference", "difference"),
    ],
)
def test_the_answer_ranks_the_way_the_question_s_comparative_goes(
    question: str, answer: str, fixed: str
) -> None:
    from scenerag.agents.compare_form import CompareForm, in_direction

    form = CompareForm("food", "bag", "z", answer)
    assert in_direction(form, question, load_words()).answer == fixed


def test_a_side_given_as_the_class_said_before_a_symbol_is_that_symbol(store: CypherStore) -> None:
    from scenerag.agents.compare_form import CompareForm

    agent, _ = scripted_agent(store, [])
    form = CompareForm("lounge", "hallway", "count MeshPlace any", "larger")
    pinned = agent._apposed_sides(form, "Which one has more mesh places, the lounge or hallway R5?")
    assert (pinned.first, pinned.second) == ("lounge", "R5")
    # no symbol after the class, or one of another class: unchanged
    assert agent._apposed_sides(form, "Which has more mesh places, the lounge or the hallways?") == form
    assert agent._apposed_sides(form, "Which has more mesh places, the lounge or hallway R1?") == form


def test_two_named_alternatives_ask_for_the_form_when_no_query_holds_up(store: CypherStore) -> None:
    """ "Does hallway R2 or hallway R5 cover more mesh places?": the model's query fails; the question offers
    two named nodes as alternatives, so the form is asked."""
    counts = _by_symbol(store, "MATCH (o:Room)-[:CONTAINS*]->(p:MeshPlace)", "count(DISTINCT p)", "R2", "R5")
    broken = "MATCH (r:Room {nodeSymbol: 'R2'}) RETURN count(p) AS n"
    form = "compare: R2; with: R5; measure: count MeshPlace any; answer: larger"
    agent, model = scripted_agent(store, [broken, form], compare_form=True)
    result = agent.run("Does hallway R2 or hallway R5 cover more mesh places?", answer_type="string")
    assert result.answer == max(counts, key=counts.__getitem__) and len(model.calls) == 2
    # the same failing query without offered alternatives: no form
    agent, model = scripted_agent(store, [broken, broken, broken], compare_form=True)
    agent.run("How many mesh places does hallway R2 cover?")
    assert all(call.messages[0].content != agent.compare_forms().system for call in model.calls)


def test_the_form_compares_the_offered_alternatives_from_the_other_named_node(store: CypherStore) -> None:
    """ "What's closer to the bag, the bed or the light O237?": a form comparing the bag with the bed from
    O237 is turned round to compare the bed and O237 from the bag."""
    (bed,) = (r["s"] for r in store.query("MATCH (o:Object {class: 'bed'}) RETURN o.nodeSymbol AS s").rows)
    dist = _by_symbol(
        store,
        "MATCH (o:Object), (g:Object {class: 'bag'})",
        "point.distance(o.center, g.center)",
        bed,
        "O237",
    )
    wrong = "compare: bag; with: bed; measure: distance O237; answer: smaller"
    ranked = "MATCH (o:Object) RETURN o.nodeSymbol ORDER BY o.center.z LIMIT 1"
    agent, _ = scripted_agent(store, [ranked, wrong], compare_form=True)
    result = agent.run("Whats closer to the bag, the bed or the light O237?", answer_type="string")
    assert result.answer == min(dist, key=dist.__getitem__)
    assert any("compare: O275; with: O237; measure: distance O285" in n for n in result.context["rewrites"])


def test_two_classes_offered_as_alternatives_ask_for_the_form(store: CypherStore) -> None:
    """ "More trash objects or more boxes? answer with the class name": one class counted (the other
    unused) holds up for neither; the form compares the two classes by their members (a count of the
    classes' own layer is how many members each has) and answers with the class."""
    members = {
        c: int(store.query(f"MATCH (o:Object {{class: '{c}'}}) RETURN count(o) AS n").rows[0]["n"])
        for c in ("trash", "box")
    }
    assert members["trash"] != members["box"]
    one_side = "MATCH (o:Object {class: 'trash'}) RETURN count(o)"
    form = "compare: trash; with: box; measure: count Object trash; answer: larger"
    agent, model = scripted_agent(store, [one_side, form], compare_form=True)
    result = agent.run(
        "are there more trash objects or more boxes in the map? answer with the class name",
        answer_type="string",
    )
    assert result.answer == max(members, key=members.__getitem__) and len(model.calls) == 2


def test_alternatives_offered_around_a_bracketed_symbol_ask_for_the_form(store: CypherStore) -> None:
    """ "Is the bag nearer to the food (O8) or to the bed (O275)?": punctuation between the two named
    nodes is no word, so they are still offered as alternatives, and the form measures both from the bag."""
    dist = _by_symbol(
        store,
        "MATCH (o:Object), (g:Object {class: 'bag'})",
        "point.distance(o.center, g.center)",
        "O8",
        "O275",
    )
    figure = "MATCH (a:Object {class: 'bag'}), (b:Object {class: 'food'}) RETURN point.distance(a.center, b.center)"
    form = "compare: O8; with: O275; measure: distance bag; answer: smaller"
    agent, _ = scripted_agent(store, [figure, form], compare_form=True)
    result = agent.run(
        "Is the bag nearer to the food (O8) or to the bed (O275)? Answer with the id.", answer_type="string"
    )
    assert result.answer == min(dist, key=dist.__getitem__)
