"""The pass-through test: a model that writes each item's reference query (or, for instructions, the
reference goal) gets every item of every question set right through the whole agent — plans, linking,
repairs, checks, grading, retries and formatting. Any stage that breaks a correct query fails here.

Also: the schema grammar local models decode under accepts every reference query (a handful of listed
exceptions, each for a reason a model can write around), so constrained decoding never forbids a correct query.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import APARTMENT, HYDRA
from scenerag import read_scene_graph
from scenerag.agents import CypherAgent, CypherAgentConfig
from scenerag.agents.cypher_grammar import cypher_grammar, question_strings
from scenerag.eval.pass_through import ReferenceModel, pass_through
from scenerag.eval.questions import load_questions
from scenerag.store import CypherStore, open_store

QUESTIONS = Path(__file__).resolve().parents[1] / "benchmarks" / "questions"

#: question-set file prefix -> the graph its items are about
GRAPHS = {"hydra": "hydra", "apartment": "apartment", "building": "building"}


def _sets(graph: str) -> list[Path]:
    return sorted(p for p in QUESTIONS.glob(f"{graph}_*.yaml"))


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, CypherStore]]:
    from scenerag.sim.building import generate_building

    graphs = {
        "hydra": lambda: read_scene_graph(HYDRA),
        "apartment": lambda: read_scene_graph(APARTMENT),
        "building": lambda: generate_building().to_scene_graph(),
    }
    out: dict[str, CypherStore] = {}
    for name, make in graphs.items():
        store = open_store(tmp_path_factory.mktemp(f"pass-{name}") / "db")
        store.load(make())
        out[name] = store
    yield out
    for store in out.values():
        store.close()


#: reference goals the agent gives in a form equal only under the domain's containment, not as propositions:
#: the agent drops a part another part implies through containment (``goal_sketch._drop_contained``), which
#: ``goals_equivalent`` (propositional) cannot see. Each is checked below to differ by exactly such a part.
EQUIVALENT_UNDER_CONTAINMENT = {
    # "visit the lounge first, then the hallway where the bicycle is, and finally park next to the sign in that
    # hallway": ending at O36, which R3 holds, visits R3, so (visited-room R3) is dropped
    "blindAL-19": ("(visited-room R3)", "(at-object O36)"),
}


def test_goals_equal_under_containment_differ_by_an_implied_part(stores: dict[str, CypherStore]) -> None:
    from scenerag.lang import goals_equivalent

    store = stores["hydra"]
    for uid, (implied, by) in EQUIVALENT_UNDER_CONTAINMENT.items():
        room, thing = implied.strip("()").split()[1], by.strip("()").split()[1]
        rows = store.query(
            "MATCH (r {nodeSymbol: $r})-[:CONTAINS*]->(t {nodeSymbol: $t}) RETURN count(*) AS n",
            {"r": room, "t": thing},
        ).rows
        assert rows[0]["n"] > 0, f"{uid}: {room} does not hold {thing}"
        item = next(q for p in _sets("hydra") for q in load_questions(p) if q.uid == uid)
        reduced = item.solution.replace(f" {implied}", "").replace(f"{implied} ", "")
        agent = CypherAgent(ReferenceModel(), store, CypherAgentConfig())
        answer = pass_through(agent, [item])[0].answer
        assert answer is not None and goals_equivalent(answer, reduced), (uid, answer, reduced)


@pytest.mark.parametrize("path", [p for g in GRAPHS for p in _sets(g)], ids=lambda p: p.stem)
def test_reference_queries_pass_through_the_whole_agent(path: Path, stores: dict[str, CypherStore]) -> None:
    graph = path.stem.split("_")[0]
    agent = CypherAgent(ReferenceModel(), stores[graph], CypherAgentConfig())
    items = pass_through(agent, load_questions(path))
    if not items:
        pytest.skip(f"{path.name} has no reference queries")
    broken = [(i.uid, i.answer, i.solution, i.error) for i in items if not i.correct]
    broken = [b for b in broken if b[0] not in EQUIVALENT_UNDER_CONTAINMENT]
    assert not broken, (
        f"{len(broken)} of {len(items)} correct reference queries broken by the agent: {broken}"
    )


#: reference queries the grammar cannot express, and why a model can still answer the item
GRAMMAR_EXCEPTIONS = {
    # a class neither the graph, its labelspace nor the question names ('structure' for "poles"): asked with
    # the question's own word the answer is the same (absent: 0)
    "hd7-absent-poles",
    # the same for 'seating' in a graph whose labelspace has no such class
    "a-absent-chairs",
    # a property of a map built in the query (x.n after collect({s: ..., n: ...})): keys after '.' are the
    # schema's; the same answer is written with ORDER BY ... LIMIT
    "u-fewest-places-rooms",
    # synonyms the writer added ('restroom', 'toilet' beside the question's 'bathroom'): none is in the graph,
    # so the question's own word gives the same answer (absent: nothing)
    "ba-absent-bathroom",
    # 'person' beside the labelspace's 'human' for "people": neither is in the graph, and the labelspace's
    # word gives the same answer (absent: false)
    "blindJ-08",
    # 'stairwell' beside the question's 'stairs' and 'staircase': none is in the graph, so the question's own
    # words give the same answer (absent: false)
    "blindV-27",
    # 'tree' and 'grass' beside the labelspace's 'flora' and the question's 'flower' for "plants or flowers":
    # none is in the graph, so the question's words give the same answer (absent: false)
    "blindAB-12",
    # 'person' and 'people' beside the labelspace's 'human' for "how many people": no node has any of them,
    # so the question's own word gives the same answer (absent: 0)
    "blindAD-29",
    # 'flower', 'tree' and 'grass' beside the labelspace's 'flora' for "plants (trees, flowers, greenery)" and
    # "any plants": no node has any of them, so the question's words give the same answer (absent: false)
    "blindAH-19",
    "blindAI-13",
    "blindAN-10",
    # 'person' and 'people' beside the labelspace's 'human' for "any people … humans": no node has any of them
    "blindAK-21",
    # an APOC function (apoc.map.fromPairs) the grammar does not offer: plain rows (RETURN o.class, count(o))
    # give the same dict, and the agent runs the reference as written (the pass-through test above)
    "blindAV-08",
}


def test_the_schema_grammar_accepts_every_reference_query(stores: dict[str, CypherStore]) -> None:
    class GrammarModel:  # the agent builds grammars only for models that can follow them
        name = "grammar-check"
        supports_grammar = True
        supports_tools = False
        context_window = 1 << 16

    rejected: list[str] = []
    checked = 0
    for graph, store in stores.items():
        agent = CypherAgent(GrammarModel(), store, CypherAgentConfig())  # type: ignore[arg-type]
        strings, pattern = agent._grammar_strings()
        for path in _sets(graph):
            for q in load_questions(path):
                if not q.cypher or q.task != "qa":  # an instruction's query is its writer's, not the model's
                    continue
                checked += 1
                grammar = cypher_grammar(
                    store.schema(), strings | question_strings(q.question), symbol_pattern=pattern
                )
                if not grammar.accepts(" ".join(q.cypher.split())):
                    rejected.append(q.uid)
    assert checked > 400
    assert set(rejected) == GRAMMAR_EXCEPTIONS, f"rejected: {sorted(set(rejected) - GRAMMAR_EXCEPTIONS)}"
