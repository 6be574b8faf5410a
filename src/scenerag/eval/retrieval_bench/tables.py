"""The whole Tables III and IV benchmark (what ``scenerag bench retrieval`` runs): deterministic methods on
every query and expression of every scene, LLM methods on a stratified subset, and the report.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from scenerag.eval.retrieval_bench.grounding import (
    GroundingRecord,
    ReferringExpression,
    format_grounding_table,
    grounding_table,
    referring_expressions,
    run_grounding,
)
from scenerag.eval.retrieval_bench.methods import GroundingMethod, flat_method, keysg_method
from scenerag.eval.retrieval_bench.objects import (
    RetrievalRecord,
    format_recall_table,
    object_retrieval_queries,
    recall_table,
    run_object_retrieval,
)
from scenerag.eval.retrieval_bench.scenes import DEFAULT_SCENES, BenchmarkError, SceneSpec, prepare_scene
from scenerag.graph import ontology as ont
from scenerag.llm.base import ChatModel
from scenerag.retrieval.embeddings import Embedder
from scenerag.retrieval.flat import FlatRetriever
from scenerag.retrieval.hierarchical import HierarchicalIndex


# -- the whole benchmark (what ``scenerag bench retrieval`` runs) --------------------------------------------------
@dataclass(frozen=True, slots=True)
class RetrievalBenchConfig:
    """What :func:`run_retrieval_benchmark` runs.

    ``tables``: ``objects`` (Table III) and/or ``grounding`` (Table IV); the deterministic methods (``flat``,
    ``keysg-embed-rules``) run on every query of every scene; with a model the LLM methods
    (``keysg-embed-llm`` and ``keysg-rag-llm`` from one run) run on ``llm_queries_per_kind`` queries per
    kind and ``llm_expressions_per_cell`` expressions per (category, with/without class) cell of the first
    ``llm_scenes`` scenes, or on everything with ``full``; ``llm_max_expressions`` caps the LLM expressions
    per scene (spread over the cells: a slow local model).
    """

    scenes: tuple[SceneSpec, ...] = DEFAULT_SCENES
    tables: tuple[str, ...] = ("objects", "grounding")
    llm_queries_per_kind: int = 3
    llm_expressions_per_cell: int = 1
    llm_scenes: int = 1
    full: bool = False
    seed: int = 0
    llm_max_expressions: int | None = None

    def __post_init__(self) -> None:
        if self.llm_max_expressions is not None and self.llm_max_expressions < 1:
            raise BenchmarkError(f"llm_max_expressions must be >= 1, got {self.llm_max_expressions}")
        unknown = set(self.tables) - {"objects", "grounding"}
        if unknown:
            raise BenchmarkError(
                f"unknown benchmark table(s) {sorted(unknown)}", hint="use objects and/or grounding"
            )
        if not self.scenes:
            raise BenchmarkError("the benchmark needs at least one scene")


@dataclass
class RetrievalBenchReport:
    """Records of both tables, per-scene statistics and what the LLM ran on."""

    config: RetrievalBenchConfig
    model: str | None
    scenes: list[dict[str, Any]] = field(default_factory=list)
    retrieval: list[RetrievalRecord] = field(default_factory=list)
    grounding: list[GroundingRecord] = field(default_factory=list)

    def recall_rows(self) -> list[dict[str, Any]]:
        return recall_table(self.retrieval) if self.retrieval else []

    def grounding_rows(self) -> list[dict[str, Any]]:
        return grounding_table(self.grounding) if self.grounding else []

    def to_text(self) -> str:
        parts = []
        for s in self.scenes:
            parts.append(
                f"{s['name']}: {s['floors']} floors, {s['rooms']} rooms, {s['objects']} objects, "
                f"{s['keyframes']} keyframes; {s.get('queries', 0)} queries, {s.get('expressions', 0)} "
                f"expressions; LLM on {s.get('llm_queries', 0)} queries and {s.get('llm_expressions', 0)} "
                f"expressions; {s['visual']}"
            )
        parts.append(f"LLM: {self.model or 'none (deterministic methods only)'}")
        if self.retrieval:
            parts += [
                "",
                "Object retrieval (Recall@K, %, at 3D IoU θ):",
                format_recall_table(self.recall_rows()),
            ]
        if self.grounding:
            parts += ["", "Grounding accuracy (%):", format_grounding_table(self.grounding_rows())]
        return "\n".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {
            "config": asdict(self.config),
            "model": self.model,
            "scenes": self.scenes,
            "recall": self.recall_rows(),
            "grounding": self.grounding_rows(),
            "retrieval_records": [asdict(r) for r in self.retrieval],
            "grounding_records": [asdict(r) for r in self.grounding],
        }


def stratified_expressions(
    expressions: Sequence[ReferringExpression], per_cell: int, seed: int = 0
) -> list[ReferringExpression]:
    """``per_cell`` expressions (seeded sample) of each (category, with/without class) cell."""
    rng = random.Random(seed)
    cells: dict[tuple[str, bool], list[ReferringExpression]] = defaultdict(list)
    for e in expressions:
        cells[(e.category, e.mentions_class)].append(e)
    out: list[ReferringExpression] = []
    for _, items in sorted(cells.items()):
        out.extend(sorted(rng.sample(items, min(per_cell, len(items))), key=lambda e: e.uid))
    return out


def spread(items: Sequence[Any], n: int) -> list[Any]:
    """``n`` items evenly spaced over ``items`` (the first always among them)."""
    if n >= len(items):
        return list(items)
    step = len(items) / n
    return [items[int(i * step)] for i in range(n)]


def _with_subset_label(records: list[Any], scene: str, uids: set[str]) -> list[Any]:
    """Copies of the deterministic records on the LLM subset, labelled ``<method> (LLM subset)``."""
    return [
        type(r)(**{**asdict(r), "method": f"{r.method} (LLM subset)"})
        for r in records
        if r.scene == scene and r.uid in uids and "llm" not in r.method and "subset" not in r.method
    ]


def run_retrieval_benchmark(
    config: RetrievalBenchConfig,
    embedder: Embedder,
    model: ChatModel | None = None,
    *,
    cache_dir: str | Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> RetrievalBenchReport:
    """Tables III and IV on ``config.scenes`` (rendered and built on first use, then cached)."""
    from scenerag.agents.hierarchical_rag import HierarchicalRAG, HierarchicalRAGConfig
    from scenerag.retrieval.hierarchical import index_dir

    say = progress or (lambda text: None)
    report = RetrievalBenchReport(config, model.name if model is not None else None)
    for i, spec in enumerate(config.scenes):
        scene = prepare_scene(spec, cache_dir, progress=say)
        index = HierarchicalIndex.open_or_build(scene.graph, index_dir(scene.build_dir), embedder)
        counts = scene.graph.label_counts()
        stats: dict[str, Any] = {
            "name": spec.name,
            "floors": counts.get(ont.FLOOR, 0),
            "rooms": counts.get(ont.ROOM, 0),
            "objects": counts.get(ont.OBJECT, 0),
            "keyframes": counts.get(ont.KEYFRAME, 0),
            "index": index.sizes(),
            "visual": index.visual_status,
        }
        report.scenes.append(stats)
        rules = HierarchicalRAG(
            None, index, HierarchicalRAGConfig(decomposition="rules", select_with_llm=False)
        )
        methods: dict[str, GroundingMethod] = {
            "flat": flat_method(FlatRetriever(index)),
            "keysg-embed-rules": keysg_method(rules, "keysg-embed-rules"),
        }
        use_llm = model is not None and (config.full or i < config.llm_scenes)
        rag = HierarchicalRAG(model, index) if use_llm else None
        if "objects" in config.tables:
            queries = object_retrieval_queries(scene.ground_truth)
            stats["queries"] = len(queries)
            report.retrieval += run_object_retrieval(scene, queries, methods)
            say(f"{spec.name}: object retrieval, {len(queries)} queries, deterministic methods done")
            if rag is not None:
                subset = (
                    queries
                    if config.full
                    else object_retrieval_queries(
                        scene.ground_truth, seed=config.seed, max_per_kind=config.llm_queries_per_kind
                    )
                )
                stats["llm_queries"] = len(subset)
                report.retrieval += run_object_retrieval(
                    scene, subset, {"keysg-rag-llm": keysg_method(rag, "keysg-rag-llm")}, progress=say
                )
                if not config.full:
                    report.retrieval += _with_subset_label(
                        report.retrieval, spec.name, {q.uid for q in subset}
                    )
        if "grounding" in config.tables:
            expressions = referring_expressions(scene.ground_truth, seed=config.seed)
            stats["expressions"] = len(expressions)
            report.grounding += run_grounding(scene, expressions, methods)
            say(f"{spec.name}: grounding, {len(expressions)} expressions, deterministic methods done")
            if rag is not None:
                chosen = (
                    expressions
                    if config.full
                    else stratified_expressions(expressions, config.llm_expressions_per_cell, config.seed)
                )
                if config.llm_max_expressions is not None and len(chosen) > config.llm_max_expressions:
                    chosen = spread(chosen, config.llm_max_expressions)
                stats["llm_expressions"] = len(chosen)
                report.grounding += run_grounding(
                    scene, chosen, {"keysg-rag-llm": keysg_method(rag, "keysg-rag-llm")}, progress=say
                )
                if not config.full:
                    report.grounding += _with_subset_label(
                        report.grounding, spec.name, {e.uid for e in chosen}
                    )
    return report


__all__ = [
    "RetrievalBenchConfig",
    "RetrievalBenchReport",
    "run_retrieval_benchmark",
    "spread",
    "stratified_expressions",
]
