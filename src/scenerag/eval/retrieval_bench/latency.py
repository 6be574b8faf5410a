"""Retrieval latency at scale: top-down retrieval over a large synthetic KeySG-shaped graph
(:func:`~scenerag.sim.synthetic_graph.synthetic_scene_graph`, no rendering), wall and thread-CPU time per
query form and stage, and end to end with query embedding (no LLM call).
"""

from __future__ import annotations

import random
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from scenerag.eval.retrieval_bench.ground_truth import floor_level, floor_phrase, room_of
from scenerag.eval.retrieval_bench.scenes import BenchmarkError, bench_cache_dir
from scenerag.graph import ontology as ont
from scenerag.graph.model import SceneGraph
from scenerag.retrieval.documents import label_text
from scenerag.retrieval.embeddings import Embedder
from scenerag.retrieval.hierarchical import HierarchicalIndex
from scenerag.sim.synthetic_graph import synthetic_scene_graph


def latency_figures(samples_ms: Iterable[float]) -> dict[str, float]:
    values = sorted(samples_ms)
    if not values:
        return {"p50": float("nan"), "p95": float("nan"), "n": 0}
    p95 = values[min(len(values) - 1, round(0.95 * (len(values) - 1)))]
    return {"p50": statistics.median(values), "p95": p95, "n": len(values)}


def latency_queries(graph: SceneGraph, n: int, seed: int = 0) -> list[str]:
    """``n`` queries over ``graph``'s objects cycling through five forms: (room, object), (floor, room,
    object), colour + room, anchor + room, and the bare object (no floor or room: the widest search)."""
    rng = random.Random(seed)
    objects = sorted(graph.nodes(ont.OBJECT), key=lambda n: n.symbol)
    if not objects:
        raise BenchmarkError("the graph has no objects to ask for")
    out = []
    for i in range(n):
        obj = rng.choice(objects)
        room = room_of(graph, obj)
        cls = label_text(obj.class_name)
        rtype = label_text(room.class_name) if room is not None else "room"
        other = label_text(rng.choice(objects).class_name)
        colour = label_text(str(obj.attributes.get("color", "")))
        forms = [
            f"the {cls} in the {rtype}",
            f"the {cls} in the {rtype} on the {floor_phrase(floor_level(obj))}",
            f"the {colour} {cls} in the {rtype}".replace("the  ", "the "),
            f"the {cls} next to the {other} in the {rtype}",
            f"the {cls}",
        ]
        out.append(forms[i % len(forms)])
    return out


LATENCY_FORMS: tuple[str, ...] = ("room", "floor+room", "colour+room", "anchor+room", "unscoped")


def measure_retrieval_latency(
    index: HierarchicalIndex, queries: Sequence[str], *, repeats: int = 3, embedded_queries: int = 60
) -> dict[str, Any]:
    """Latency of top-down retrieval over ``index`` (no LLM): each rule-decomposed query with precomputed
    query vectors (wall and thread-CPU ms, per query form and per stage), and end to end with the
    embedding of texts the embedder has not cached (first ``embedded_queries`` queries)."""
    from scenerag.retrieval.hierarchical import HierarchicalRetriever, RuleBasedDecomposer

    retriever = HierarchicalRetriever(index)
    rules = RuleBasedDecomposer.for_index(index)
    decompositions = [rules.decompose(q) for q in queries]
    vectors = [retriever.embed(d) for d in decompositions]
    for d, v in list(zip(decompositions, vectors, strict=True))[:20]:
        retriever.retrieve(d, v)  # warm-up
    wall: list[float] = []
    cpu: list[float] = []
    stages: list[dict[str, float]] = []
    by_form: dict[str, list[float]] = defaultdict(list)
    for _ in range(repeats):
        for i, (d, v) in enumerate(zip(decompositions, vectors, strict=True)):
            t, c = time.perf_counter(), time.thread_time()
            context = retriever.retrieve(d, v)
            cpu.append((time.thread_time() - c) * 1000.0)
            wall.append((time.perf_counter() - t) * 1000.0)
            stages.append(context.timings_ms)
            by_form[LATENCY_FORMS[i % len(LATENCY_FORMS)]].append(wall[-1])
    clear = getattr(index.embedder, "clear_cache", None)
    end_to_end: list[float] = []
    embedding: list[float] = []
    for q in queries[:embedded_queries]:
        if callable(clear):
            clear()
        t = time.perf_counter()
        context = retriever.retrieve(rules.decompose(q))
        end_to_end.append((time.perf_counter() - t) * 1000.0)
        embedding.append(context.timings_ms.get("embed", 0.0))
    return {
        "retrievals": len(wall),
        "retrieval_wall_ms": latency_figures(wall),
        "retrieval_cpu_ms": latency_figures(cpu),
        "by_form_wall_ms": {k: latency_figures(v) for k, v in by_form.items()},
        "stage_p50_ms": {k: statistics.median(s.get(k, 0.0) for s in stages) for k in stages[0]}
        if stages
        else {},
        "end_to_end_ms": latency_figures(end_to_end),
        "embedding_ms": latency_figures(embedding),
    }


def run_latency_bench(
    embedder: Embedder,
    *,
    objects: int = 10_000,
    keyframes: int = 5_000,
    queries: int = 200,
    repeats: int = 3,
    seed: int = 0,
    cache_dir: str | Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """The latency bar: a synthetic KeySG-shaped graph of ``objects`` objects and ``keyframes`` keyframes
    (no rendering), indexed once (cached under the bench cache), then :func:`measure_retrieval_latency` on
    ``queries`` rule-decomposed queries. The result also names the graph's size and the index build time."""
    say = progress or (lambda text: None)
    started = time.perf_counter()
    graph = synthetic_scene_graph(objects, keyframes, seed=seed)
    root = Path(cache_dir) if cache_dir is not None else bench_cache_dir()
    index = HierarchicalIndex.open_or_build(
        graph, root / f"synthetic-{objects}-{keyframes}-s{seed}" / "hierarchical_index", embedder
    )
    counts = {str(k): int(v) for k, v in graph.label_counts().items()}
    setup_s = time.perf_counter() - started
    say(f"synthetic graph {counts} indexed (or loaded) in {setup_s:.1f} s")
    result = measure_retrieval_latency(index, latency_queries(graph, queries, seed), repeats=repeats)
    return {"graph": counts, "objects": objects, "keyframes": keyframes, "setup_s": setup_s, **result}


def format_latency(result: Mapping[str, Any]) -> str:
    """The latency figures of :func:`run_latency_bench` as text (wall and thread-CPU p50/p95, per query
    form and stage, and end to end with query embedding)."""
    r, c = result["retrieval_wall_ms"], result["retrieval_cpu_ms"]
    lines = [
        f"Retrieval latency, {result.get('objects', '?')} objects / {result.get('keyframes', '?')} keyframes, "
        f"{result['retrievals']} retrievals (no LLM call)",
        f"  retrieval only (precomputed query vectors): wall p50 {r['p50']:.2f} ms, p95 {r['p95']:.2f} ms; "
        f"thread CPU p50 {c['p50']:.2f} ms, p95 {c['p95']:.2f} ms",
    ]
    for form in LATENCY_FORMS:
        fig = result["by_form_wall_ms"].get(form)
        if fig:
            lines.append(f"    {form:12s} wall p50 {fig['p50']:.2f} ms, p95 {fig['p95']:.2f} ms")
    lines.append("  stage p50 (ms): " + ", ".join(f"{k} {v:.2f}" for k, v in result["stage_p50_ms"].items()))
    e, m = result["end_to_end_ms"], result["embedding_ms"]
    lines.append(
        f"  end to end incl. embedding unseen texts (MiniLM, 1 thread): p50 {e['p50']:.1f} ms, "
        f"p95 {e['p95']:.1f} ms (embedding alone p50 {m['p50']:.1f} ms)"
    )
    return "\n".join(lines)


__all__ = [
    "LATENCY_FORMS",
    "format_latency",
    "latency_figures",
    "latency_queries",
    "measure_retrieval_latency",
    "run_latency_bench",
]
