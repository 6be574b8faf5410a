"""Retrieval benchmarks on synthetic multi-floor buildings with ground truth (KeySG Tables III and IV, and a
cross-method comparison), importable so ``scenerag bench retrieval`` and ``benchmarks/*.py`` share them.
This package only measures; the methods it compares live with the methods (``scenerag.retrieval.flat``,
``scenerag.agents.hierarchical_rag``, ``scenerag.agents.subgraph_rag``, the Cypher agents) and the large
synthetic graph of the latency bar with the simulators (``scenerag.sim.synthetic_graph``).

Contract:
- Scenes (:mod:`.scenes`): :func:`prepare_scene` generates a building, renders it and builds its KeySG graph
  offline (oracle perception, template summaries), caching everything under :func:`bench_cache_dir`.
- Object retrieval (Table III, HM3DSem protocol, :mod:`.objects`): :func:`object_retrieval_queries` derives
  "the oven in the kitchen" (room, object) and "the toilet in the bathroom on the ground floor" (floor, room,
  object) queries from the ground truth; a query's targets are every ground-truth object of that class in a
  room of that type (on that floor). :func:`run_object_retrieval` ranks the *built* graph's objects per
  query and scores Recall@K at 3D-box IoU thresholds (θ = 0.0 means the boxes overlap at all, IoU > 0;
  otherwise IoU ≥ θ) against any target.
- Grounding (Table IV, Nr3D spirit, :mod:`.grounding`): :func:`referring_expressions` derives unambiguous
  spatial, colour and size expressions, with and without the target's class, for targets that have
  same-class distractors in their room; a prediction is correct when the ground-truth object its box
  overlaps most is the target (IoU ≥ 0.25).
- Methods (:mod:`.methods`): each compared method is a :data:`GroundingMethod` (query text →
  :class:`GroundingOutcome`); :func:`flat_method` and :func:`keysg_method` adapt the flat baseline and
  ``HierarchicalRAG``.
- Cross-method QA (:mod:`.cross_method`): :func:`cross_method_questions` derives typed questions with
  answers in the built graph's symbols; :func:`run_cross_method` runs any ``SceneAgent``s on them and
  records success, tokens and time.
- Latency (:mod:`.latency`): top-down retrieval over a large synthetic graph, no LLM.
- The whole Tables III/IV run and its report: :mod:`.tables`.
"""

from scenerag.eval.retrieval_bench.cross_method import (
    CROSS_METHODS,
    QUESTION_TYPES,
    STORE_METHODS,
    SYNONYMS,
    CrossMethodConfig,
    CrossMethodReport,
    cross_method_agents,
    cross_method_questions,
    format_per_type,
    per_type_table,
    run_cross_method,
    run_cross_method_bench,
)
from scenerag.eval.retrieval_bench.ground_truth import (
    Box,
    best_ground_truth_match,
    box_iou,
    box_of,
    floor_phrase,
    plural,
    target_objects,
)
from scenerag.eval.retrieval_bench.grounding import (
    GROUNDING_CATEGORIES,
    GROUNDING_IOU,
    GroundingRecord,
    ReferringExpression,
    format_grounding_table,
    grounding_table,
    referring_expressions,
    run_grounding,
)
from scenerag.eval.retrieval_bench.latency import (
    LATENCY_FORMS,
    format_latency,
    latency_figures,
    latency_queries,
    measure_retrieval_latency,
    run_latency_bench,
)
from scenerag.eval.retrieval_bench.methods import GroundingMethod, GroundingOutcome, flat_method, keysg_method
from scenerag.eval.retrieval_bench.objects import (
    IOU_THRESHOLDS,
    QUERY_KINDS,
    RECALL_KS,
    RetrievalQuery,
    RetrievalRecord,
    format_recall_table,
    object_retrieval_queries,
    recall_hits,
    recall_table,
    run_object_retrieval,
)
from scenerag.eval.retrieval_bench.scenes import (
    DEFAULT_SCENES,
    SMALL_SCENE,
    BenchmarkError,
    PreparedScene,
    SceneSpec,
    bench_cache_dir,
    prepare_scene,
)
from scenerag.eval.retrieval_bench.tables import (
    RetrievalBenchConfig,
    RetrievalBenchReport,
    run_retrieval_benchmark,
    spread,
    stratified_expressions,
)

__all__ = [
    "CROSS_METHODS",
    "DEFAULT_SCENES",
    "GROUNDING_CATEGORIES",
    "GROUNDING_IOU",
    "IOU_THRESHOLDS",
    "LATENCY_FORMS",
    "QUERY_KINDS",
    "QUESTION_TYPES",
    "RECALL_KS",
    "SMALL_SCENE",
    "STORE_METHODS",
    "SYNONYMS",
    "BenchmarkError",
    "Box",
    "CrossMethodConfig",
    "CrossMethodReport",
    "GroundingMethod",
    "GroundingOutcome",
    "GroundingRecord",
    "PreparedScene",
    "ReferringExpression",
    "RetrievalBenchConfig",
    "RetrievalBenchReport",
    "RetrievalQuery",
    "RetrievalRecord",
    "SceneSpec",
    "bench_cache_dir",
    "best_ground_truth_match",
    "box_iou",
    "box_of",
    "cross_method_agents",
    "cross_method_questions",
    "flat_method",
    "floor_phrase",
    "format_grounding_table",
    "format_latency",
    "format_per_type",
    "format_recall_table",
    "grounding_table",
    "keysg_method",
    "latency_figures",
    "latency_queries",
    "measure_retrieval_latency",
    "object_retrieval_queries",
    "per_type_table",
    "plural",
    "prepare_scene",
    "recall_hits",
    "recall_table",
    "referring_expressions",
    "run_cross_method",
    "run_cross_method_bench",
    "run_grounding",
    "run_latency_bench",
    "run_object_retrieval",
    "run_retrieval_benchmark",
    "spread",
    "stratified_expressions",
    "target_objects",
]
