"""Question sets (YAML, generators, answer checking) and the experiment runner."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from conftest import HYDRA
from scenerag import SceneGraph
from scenerag.eval.questions import (
    Question,
    QuestionSetError,
    generate_pddl_questions,
    generate_qa_questions,
    load_questions,
)
from scenerag.eval.runner import ExperimentError, expand_runs, load_experiment, run_experiment, write_results
from scenerag.llm import ScriptedChatModel

QUESTIONS = Path(__file__).resolve().parents[1] / "benchmarks" / "questions"


def test_committed_hydra_sets_match_the_graph(hydra_graph: SceneGraph) -> None:
    qa = {q.uid: q for q in load_questions(QUESTIONS / "hydra_qa.yaml")}
    pddl = {q.uid: q for q in load_questions(QUESTIONS / "hydra_pddl.yaml")}
    for q in generate_qa_questions(hydra_graph, seed=0):
        assert q.is_correct(qa[q.uid].solution), q.uid
    for q in generate_pddl_questions(hydra_graph, seed=0):
        assert q.is_correct(pddl[q.uid].solution), q.uid
    # the Heracles seed solutions, re-derived independently
    signs = set()
    for room in hydra_graph.nodes("Room"):
        if room.class_name == "lounge":
            for place in hydra_graph.children(room.symbol):
                signs |= {o.symbol for o in hydra_graph.children(place.symbol) if o.class_name == "sign"}
    assert qa["seed-12A"].is_correct("<" + ", ".join(signs) + ">")
    bike = next(o for o in hydra_graph.nodes("Object") if o.class_name == "bicycle")
    box = min(
        (o for o in hydra_graph.nodes("Object") if o.class_name == "box"),
        key=lambda o: math.dist(o.position, bike.position),
    )
    assert pddl["seed-p32A"].is_correct(f"(safe {box.symbol})")
    trash = sorted(o.symbol for o in hydra_graph.nodes("Object") if o.class_name == "trash")
    assert pddl["seed-p31B"].is_correct("(or " + " ".join(f"(holding {t})" for t in reversed(trash)) + ")")
    assert len(qa) >= 25 and len(pddl) >= 15


def test_outdoor_set_matches_generator() -> None:
    from scenerag.sim.outdoor import generate_outdoor_graph

    committed = {q.uid: q for q in load_questions(QUESTIONS / "outdoor_qa.yaml")}
    for q in generate_qa_questions(generate_outdoor_graph(), seed=0):
        assert committed[q.uid].solution == q.solution, q.uid


def test_answer_checking() -> None:
    q = Question(uid="a", question="?", solution="<O1, O2>")
    assert (
        q.is_correct("<o2, O1>")
        and not q.is_correct("<O1>")
        and not q.is_correct("<O1")
        and not q.is_correct(None)
    )
    assert q.answer_type() == "set"
    p = Question(uid="b", question="?", solution="(and (holding O1) (visited-room R2))", comparator="PDDL")
    assert p.is_correct("(and (visited-room R2) (holding O1))") and not p.is_correct("(holding O1)")
    assert not p.is_correct("(and (holding O1)")
    assert p.task == "pddl" and p.answer_type() is None


def test_question_file_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("questions: [{uid: 1, question: q}]")
    with pytest.raises(QuestionSetError, match=r"bad.yaml: questions.0.solution"):
        load_questions(bad)
    bad.write_text("questions: [{uid: a, question: q, solution: '1'}, {uid: a, question: r, solution: '2'}]")
    with pytest.raises(QuestionSetError, match="duplicate uid"):
        load_questions(bad)
    bad.write_text("questions: [unclosed")
    with pytest.raises(QuestionSetError, match="not valid YAML"):
        load_questions(bad)
    with pytest.raises(QuestionSetError, match="file not found"):
        load_questions(tmp_path / "missing.yaml")
    seed = tmp_path / "seed.yaml"
    seed.write_text(
        "questions:\n- uid: 0A\n  question: Go\n  solution: (visited-object O1)\n"
        "  correctness_comparator: {comparison_type: PDDL, relation: equal}\n  tags: []\n"
    )
    assert load_questions(seed)[0].comparator == "PDDL"


def test_expand_runs() -> None:
    runs = expand_runs(
        [{"method": "cypher", "schema": [True, False], "max_tool_calls": [1, 5]}, {"method": "context"}]
    )
    assert [r.label for r in runs] == [
        "cypher-agentic-schema-M=1",
        "cypher-agentic-schema-M=5",
        "cypher-agentic-noschema-M=1",
        "cypher-agentic-noschema-M=5",
        "context-agentic",
    ]


def test_runner_end_to_end_with_scripted_model(tmp_path: Path) -> None:
    qfile = tmp_path / "q.yaml"
    qfile.write_text(
        "questions:\n"
        "- {uid: rooms, question: 'How many rooms?', solution: '5'}\n"
        "- {uid: go, question: 'Go to object O3.', solution: '(visited-object O3)', comparator: PDDL}\n"
    )
    exp = tmp_path / "exp.yaml"
    exp.write_text(
        f"graph: {HYDRA}\n"
        "questions: [q.yaml]\n"
        "runs:\n  - {method: cypher, mode: [agentic, feedforward], model: scripted}\n"
    )
    experiment = load_experiment(exp)

    script = [  # the Cypher agent replies in plain text: a query, or "Cypher: ... / Goal: ..." for instructions
        "MATCH (r:Room) RETURN count(r) AS n",
        "Cypher: none\nGoal: (visited-object O3)",
        "MATCH (o:Object {class: 'bag'}) RETURN count(o) AS n",
        "Cypher: none\nGoal: (visited-object O3)",
    ]
    model = ScriptedChatModel(script, supports_tools=False)
    records = list(run_experiment(experiment, model_factory=lambda spec: model))
    assert [(r.config, r.uid, r.correct) for r in records] == [
        ("cypher-agentic-schema-M=5", "rooms", True),
        ("cypher-agentic-schema-M=5", "go", True),
        ("cypher-feedforward-schema", "rooms", False),
        ("cypher-feedforward-schema", "go", True),
    ]
    rows = write_results(tmp_path / "out", records)
    assert rows[0]["success"] == 2 and rows[1]["success_rate"] == 0.5
    assert rows[0]["valid_query_rate"] == 1.0 and rows[0]["input_tokens"] > 0
    assert (
        "| cypher-feedforward-schema | scripted | 1/2 (50%)" in (tmp_path / "out" / "summary.md").read_text()
    )
    assert len((tmp_path / "out" / "records.jsonl").read_text().splitlines()) == 4


def test_experiment_file_errors(tmp_path: Path) -> None:
    exp = tmp_path / "exp.yaml"
    exp.write_text("graph: x.json\nruns: [{method: magic}]\n")
    with pytest.raises(Exception, match=r"x\.json"):
        load_experiment(exp)
    exp.write_text("graph: {outdoor: {n_places: 100, n_regions: 2, n_objects: 3}}\nruns: [{method: magic}]\n")
    with pytest.raises(ExperimentError, match="no questions"):
        load_experiment(exp)
    (tmp_path / "q.yaml").write_text("questions: [{uid: a, question: q, solution: '1'}]")
    exp.write_text(
        "graph: {outdoor: {n_places: 100, n_regions: 2, n_objects: 3}}\nquestions: [q.yaml]\nruns: [{method: magic}]\n"
    )
    with pytest.raises(ExperimentError, match="runs"):
        load_experiment(exp)
