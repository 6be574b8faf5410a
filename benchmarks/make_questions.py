"""Write the question sets in benchmarks/questions/ from the scene graphs they are about.

    .venv/bin/python benchmarks/make_questions.py

hydra_qa.yaml / hydra_pddl.yaml: the Heracles seed questions that refer to the Hydra example graph
(../shared/data/hydra_small_indoor_dsg.json), verified against it, plus generated ones (ground truth from
the graph). outdoor_qa.yaml: generated questions about the default synthetic outdoor graph (16k places).
tests/test_question_sets.py re-derives every solution and fails if a file goes stale.
"""

from __future__ import annotations

from pathlib import Path

from scenerag.eval.questions import Question, generate_pddl_questions, generate_qa_questions, save_questions
from scenerag.graph.io import read_scene_graph
from scenerag.sim.outdoor import generate_outdoor_graph

HERE = Path(__file__).resolve().parent / "questions"
HYDRA = Path(__file__).resolve().parents[2] / "shared" / "data" / "hydra_small_indoor_dsg.json"

# The heracles_agents example questions about this graph (examples/questions/*.yaml), solutions unchanged.
SEED_QA = [
    Question(
        uid="seed-0A",
        name="Distinct objects",
        question="What kind of objects are in the scene graph?",
        solution="<seating, storage, sign, decor, trash, box, appliance, light, food, bicycle, bed, bag>",
        tags=["seed", "listing"],
    ),
    Question(
        uid="seed-12A",
        name="Signs in Lounge",
        question="Which signs are in the lounge?",
        solution="<O283, O255, O3, O264>",
        tags=["seed", "hierarchy"],
    ),
    Question(
        uid="seed-17B",
        name="Region fewest objects",
        question="Tell me the two rooms with the smallest number of objects.",
        solution="<R3, R4>",
        tags=["seed", "aggregation"],
    ),
    Question(
        uid="seed-27B",
        name="Room with least neighbors",
        question="Tell me the room with fewest adjacent rooms.",
        solution="R1",
        tags=["seed", "topology"],
    ),
    Question(
        uid="seed-48B",
        name="Objects near bag",
        question="Tell me the number of objects in mesh places that are within 6 hops of the bag's mesh place, "
        "other than the bag itself.",
        solution="28",
        tags=["seed", "spatial", "topology"],
    ),
    Question(
        uid="seed-14A",
        name="Where is trash?",
        question="Where are all the trash can positions?",
        solution="<POINT(-18.70 -4.21 0.12), POINT(-19.22 -4.42 0.03), POINT(-20.96 -20.89 -0.02), "
        "POINT(-25.17 -22.58 -0.21)>",
        tags=["seed", "positions"],
    ),
]
SEED_PDDL = [
    Question(
        uid="seed-p0A",
        name="Go to object 79.",
        question="Go to object 79.",
        solution="(visited-object O79)",
        comparator="PDDL",
        tags=["seed", "direct-symbol"],
    ),
    Question(
        uid="seed-p22A",
        name="Visit furthest storage",
        question="Go to the storage unit that is farthest from the origin.",
        solution="(visited-object O75)",
        comparator="PDDL",
        tags=["seed", "implicit-spatial-reference"],
    ),
    Question(
        uid="seed-p31B",
        name="Grab a trash",
        question="Grab a wastebin",
        solution="(or (holding O19) (holding O30) (holding O64) (holding O79))",
        comparator="PDDL",
        tags=["seed", "direct-class", "synonym"],
    ),
    Question(
        uid="seed-p32A",
        name="Inspect the box",
        question="Get a good look at the box that's closest to the bicycle",
        solution="(safe O59)",
        comparator="PDDL",
        tags=["seed", "spatial-reference"],
    ),
    Question(
        uid="seed-p34B",
        name="Ordered places",
        question="First go to mesh place 59110 and then mesh place 10247",
        solution="(and (visited-place P59110) (at-place P10247))",
        comparator="PDDL",
        tags=["seed", "ordering"],
    ),
    Question(
        uid="seed-p49B",
        name="Grab bike, avoid region, visit hallways",
        question="Grab the bicycle, or visit the hallways without going into the lounge.",
        solution="(or (holding O43) (and (visited-room R2) (visited-room R3) (visited-room R4) (visited-room R5) "
        "(not (visited-room R1))))",
        comparator="PDDL",
        tags=["seed", "direct-class", "avoid", "combination"],
    ),
]


def main() -> None:
    HERE.mkdir(exist_ok=True)
    hydra = read_scene_graph(HYDRA)
    save_questions(
        HERE / "hydra_qa.yaml",
        SEED_QA + generate_qa_questions(hydra, seed=0),
        header="Q&A about ../shared/data/hydra_small_indoor_dsg.json (benchmarks/make_questions.py)",
    )
    save_questions(
        HERE / "hydra_pddl.yaml",
        SEED_PDDL + generate_pddl_questions(hydra, seed=0),
        header="Instructions -> PDDL goals over the Hydra example (benchmarks/make_questions.py)",
    )
    outdoor = generate_outdoor_graph()
    save_questions(
        HERE / "outdoor_qa.yaml",
        generate_qa_questions(outdoor, seed=0),
        header="Q&A about generate_outdoor_graph() defaults: 124 regions, 15,944 places, 314 objects",
    )
    for name in ("hydra_qa.yaml", "hydra_pddl.yaml", "outdoor_qa.yaml"):
        print(name, (HERE / name).read_text().count("- uid:"), "questions")


if __name__ == "__main__":
    main()
