"""Benchmark of scenerag.retrieval: embedding throughput, index build, top-10 search and per-node updates.

Builds a synthetic household scene graph of ``--nodes`` entity documents (open-vocabulary object labels,
rooms, places, some captions), indexes it with the real all-MiniLM-L6-v2 model in an ``EntityStore`` and
measures, printing one table:

- batch embedding throughput (distinct sentences/s) and single new-label latency;
- index build (documents, embedding of the distinct texts, index insert) for the whole graph;
- each latency as wall-clock p50/p95 and the calling thread's CPU-time p50 (the cost on a quiet core);
- top-10 search latency p50/p95: index only (precomputed query vectors), with metadata filters, and end to
  end from query text; and the worst case of ``--nodes`` *distinct* random vectors (no shared rows);
- incremental update latency per node: ``upsert_node`` with an unseen short label (embedding included),
  a metadata-only change, and ``remove_node``.

Usage: ``python benchmarks/vector_index_bench.py [--nodes 100000] [--threads 1] [--hnsw]``.
Targets: top-10 search p50 <= 10 ms at 100k documents; per-node update p50 <= 5 ms. The rows and the run's
conditions go to ``benchmarks/results/vector_index_bench.json`` (``--record``).
"""

from __future__ import annotations

import argparse
import gc
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from bench_record import BenchRecord, add_record_argument
from scenerag.graph.model import Node, SceneGraph
from scenerag.retrieval.embeddings import make_embedder
from scenerag.retrieval.entity_store import EntityStore
from scenerag.retrieval.vector_index import VectorIndex


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


NOUNS = _words(
    "mug cup glass plate bowl fork knife spoon pan pot kettle toaster microwave oven stove refrigerator "
    "dishwasher sink faucet cabinet drawer shelf bookshelf book magazine newspaper lamp candle vase plant "
    "flowerpot chair armchair sofa couch stool bench table desk nightstand dresser wardrobe bed pillow "
    "blanket rug carpet curtain blind window door mirror picture painting clock television remote speaker "
    "laptop computer monitor keyboard mouse printer phone tablet charger cable router fan heater radiator "
    "towel soap shampoo toothbrush toilet bathtub shower basket hamper bucket mop broom vacuum ironing_board "
    "iron hanger shoe boot backpack suitcase umbrella coat jacket hat scarf glove toy ball doll puzzle "
    "guitar piano drum trash_can recycling_bin box crate bottle jar can cereal apple banana bread cheese "
    "egg milk juice wine_bottle cutting_board tray napkin tissue_box lightswitch outlet thermostat"
)
ADJECTIVES = _words(
    "red blue green white black grey yellow wooden metal plastic glass ceramic small large old new "
    "striped round square tall short leather broken clean dirty"
)
ROOMS = _words(
    "kitchen living_room bedroom bathroom dining_room office hallway laundry_room garage closet "
    "pantry nursery basement attic balcony"
)
NEW_NOUNS = _words(
    "harmonica stapler globe hourglass thermos blender colander ladle whisk corkscrew telescope "
    "metronome typewriter accordion compass kayak paddle snorkel easel tripod projector ukulele "
    "sewing_machine abacus birdcage aquarium fishing_rod skateboard helmet saxophone"
)
CAPTION_PARTS = (
    "sitting on",
    "leaning against",
    "next to",
    "partly hidden behind",
    "stacked on top of",
    "lying under",
)


def percentile_ms(samples: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(samples) * 1e3, q))


class Samples(list[float]):
    """Wall-clock seconds per call, with the calling thread's CPU seconds per call in ``cpu``.

    On a shared, loaded machine wall time includes waiting for a core; the CPU time of the (single)
    working thread is what the call costs on a quiet core (torch and faiss run one thread here).
    """

    def __init__(self) -> None:
        super().__init__()
        self.cpu: list[float] = []


def timed(fn: Callable[[], Any], repeat: int) -> Samples:
    samples = Samples()
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.thread_time()
        fn()
        samples.cpu.append(time.thread_time() - start_cpu)
        samples.append(time.perf_counter() - start)
    return samples


def household_graph(n_nodes: int, caption_fraction: float, seed: int = 0) -> SceneGraph:
    """~n_nodes nodes: 1 building, floors, rooms, places (1 per 4 objects) and open-vocabulary objects."""
    rng = np.random.default_rng(seed)
    g = SceneGraph()
    g.add("B0", "Building", "house", (0, 0, 0))
    n_floors = max(1, n_nodes // 25_000)
    n_rooms = max(2, n_nodes // 500)
    n_places = max(2, (n_nodes - 1 - n_floors - n_rooms) // 5)
    n_objects = n_nodes - 1 - n_floors - n_rooms - n_places
    for f in range(n_floors):
        g.add(f"F{f}", "Floor", "floor", (0, 0, 3.0 * f))
        g.add_edge("B0", f"F{f}", "CONTAINS")
    for r in range(n_rooms):
        g.add(f"R{r}", "Room", ROOMS[r % len(ROOMS)], (float(r % 40) * 5, float(r // 40) * 5, 0))
        g.add_edge(f"F{r % n_floors}", f"R{r}", "CONTAINS")
    for p in range(n_places):
        g.add(f"P{p}", "Place", "place", tuple(rng.uniform(0, 200, 3)))
        g.add_edge(f"R{p % n_rooms}", f"P{p}", "CONTAINS")
    for o in range(n_objects):
        noun = NOUNS[int(rng.integers(len(NOUNS)))]
        label = noun if rng.random() < 0.5 else f"{ADJECTIVES[int(rng.integers(len(ADJECTIVES)))]} {noun}"
        attrs: dict[str, Any] = {
            "isDirty": bool(rng.random() < 0.3),
            "temperature": ("Hot", "Cold", "RoomTemp")[int(rng.integers(3))],
            "mass_kg": round(float(rng.uniform(0.05, 40)), 2),
        }
        if rng.random() < caption_fraction:
            other = NOUNS[int(rng.integers(len(NOUNS)))].replace("_", " ")
            where = CAPTION_PARTS[int(rng.integers(len(CAPTION_PARTS)))]
            attrs["caption"] = f"a {label.replace('_', ' ')} {where} the {other}, seen in frame {o}"
        g.add(f"O{o}", "Object", label, tuple(rng.uniform(0, 200, 3)), **attrs)
        g.add_edge(f"P{int(rng.integers(n_places))}", f"O{o}", "CONTAINS")
    return g


Row = tuple[str, str, str]


class Table:
    """Collects result rows, echoing each as it is measured."""

    def __init__(self) -> None:
        self.rows: list[Row] = []
        self.data: list[dict[str, Any]] = []

    def add(self, what: str, value: str, note: str = "", **data: Any) -> None:
        self.rows.append((what, value, note))
        self.data.append({"what": what, "value": value, "note": note, **data})
        print(f"  {what}: {value} {note}", flush=True)

    def latency(self, what: str, samples: Samples, note: str = "") -> None:
        self.add(
            what,
            f"p50 {percentile_ms(samples, 50):6.2f} ms, p95 {percentile_ms(samples, 95):6.2f} ms "
            f"| cpu p50 {percentile_ms(samples.cpu, 50):6.2f} ms",
            note,
            p50_ms=percentile_ms(samples, 50),
            p95_ms=percentile_ms(samples, 95),
            cpu_p50_ms=percentile_ms(samples.cpu, 50),
        )

    def print(self) -> None:
        width = max(len(r[0]) for r in self.rows)
        print("\n" + "-" * (width + 60))
        for what, value, note in self.rows:
            print(f"{what:<{width}}  {value}  {note}".rstrip())


def bench_embedding(embedder: Any, table: Table) -> None:
    sentences = [
        f"a {ADJECTIVES[i % len(ADJECTIVES)]} {NOUNS[i % len(NOUNS)].replace('_', ' ')} "
        f"{CAPTION_PARTS[i % len(CAPTION_PARTS)]} the {NOUNS[(i * 7) % len(NOUNS)]} in sample {i}"
        for i in range(1000)
    ]
    embedder.embed(sentences[:32])  # warm-up
    once = timed(lambda: embedder.embed(sentences[32:], batch_size=64), 1)
    n = len(sentences) - 32
    table.add(
        "batch embedding, 13-word sentences",
        f"{n / once[0]:.0f} sentences/s",
        f"(cpu: {n / once.cpu[0]:.0f}/s; batch 64, cache misses)",
    )
    labels = [f"{a} {n}" for a in ADJECTIVES for n in NOUNS[:40]][:960]
    once = timed(lambda: embedder.embed(labels, batch_size=128), 1)
    table.add(
        "batch embedding, short labels",
        f"{len(labels) / once[0]:.0f} labels/s",
        f"(cpu: {len(labels) / once.cpu[0]:.0f}/s; batch 128)",
    )
    singles = iter([f"{a} {n}" for a in ADJECTIVES for n in NEW_NOUNS][:100])
    table.latency("single new label embed", timed(lambda: embedder.embed([next(singles)]), 100))
    embedder.clear_cache()


def bench_entity_store(embedder: Any, args: argparse.Namespace, table: Table) -> None:
    t0 = time.perf_counter()
    graph = household_graph(args.nodes, args.captions)
    print(f"graph: {graph.summary()} ({time.perf_counter() - t0:.1f} s to generate)")
    store = EntityStore(embedder)
    stages: dict[str, float] = {}
    last = [time.perf_counter()]

    def progress(stage: str, done: int, total: int) -> None:
        now = time.perf_counter()
        stages[stage] = stages.get(stage, 0.0) + now - last[0]
        last[0] = now

    gc.collect()
    encoded_before = embedder.stats().texts_encoded
    t0 = last[0] = time.perf_counter()
    report = store.sync(graph, batch_size=128, progress=progress)
    encoded = embedder.stats().texts_encoded - encoded_before
    table.add(
        f"build: sync {graph.num_nodes} nodes -> {len(store.index)} documents",
        f"{time.perf_counter() - t0:.1f} s",
        f"(documents {stages.get('documents', 0):.1f} s, embed {report.texts_embedded} texts = {encoded} "
        f"distinct {stages.get('embed', 0):.1f} s, index {stages.get('index', 0):.1f} s; "
        f"{store.index.num_vectors} distinct vectors)",
    )

    rng = np.random.default_rng(1)
    query_texts = [
        f"{ADJECTIVES[int(rng.integers(len(ADJECTIVES)))]} {NOUNS[int(rng.integers(len(NOUNS)))]} "
        f"for the {ROOMS[int(rng.integers(len(ROOMS)))]} #{i}"
        for i in range(args.queries)
    ]
    query_vectors = embedder.embed(query_texts)
    index = store.index
    counter = iter(range(10**9))
    for name, kw in [
        ("top-10 search, index only", {}),
        ("top-10 search, filter class+isDirty", {"filter": {"class": "mug", "isDirty": True}}),
        (
            "top-10 search, filter room $in (5 rooms)",
            {"filter": {"room": {"$in": ["R1", "R2", "R3", "R4", "R5"]}}},
        ),
        ("top-10 search, filter temperature $ne", {"filter": {"temperature": {"$ne": "Hot"}}}),
        ("top-10 search, numeric range (1% pass)", {"filter": {"mass_kg": {"$lt": 0.45}}}),
    ]:
        samples = timed(
            lambda kw=kw: index.search(query_vectors[next(counter) % args.queries], 10, **kw), args.queries
        )
        table.latency(name, samples)
    verbs = ["drink from", "sit on", "sleep in", "read", "cook with"]
    fresh = iter(
        [f"something to {verbs[i % 5]} in the {ROOMS[i % len(ROOMS)]} ({i})" for i in range(args.queries)]
    )
    samples = timed(lambda: store.search(next(fresh), 10, labels=["Object"]), args.queries)
    table.latency("top-10 entity search from new query text", samples, "(query embedding included)")

    new_labels = [f"{a} {n.replace('_', ' ')}" for n in NEW_NOUNS for a in ADJECTIVES]
    rng.shuffle(new_labels)
    new_labels = new_labels[: args.updates]
    added = iter(range(len(new_labels)))

    def add_new() -> None:
        i = next(added)
        store.upsert_node(Node(f"N{i}", "Object", new_labels[i], (1.0, 2.0, 0.5)), ancestors={"room": "R1"})

    samples = timed(add_new, len(new_labels))
    table.latency("update: add node with unseen label", samples, "(embedding included)")
    batch_labels = [
        f"{a} {n.replace('_', ' ')} mk{j}" for j in range(2) for n in NEW_NOUNS for a in ADJECTIVES[:8]
    ]
    batches = iter(range(10**9))

    def add_batch() -> None:
        b = next(batches)
        nodes = [
            Node(f"M{b}_{j}", "Object", batch_labels[(b * 16 + j) % len(batch_labels)], (1.0, 2.0, 0.5))
            for j in range(16)
        ]
        store.upsert_nodes(nodes, ancestors={node.symbol: {"room": "R1"} for node in nodes})

    samples = timed(add_batch, max(1, args.updates // 16))
    per_node = Samples()
    per_node.extend(s / 16 for s in samples)
    per_node.cpu.extend(s / 16 for s in samples.cpu)
    table.latency("update: add 16 unseen labels per call, per node", per_node, "(one embedding batch)")
    objects = iter([graph.node(f"O{i}") for i in range(args.updates)])

    def flip() -> None:
        node = next(objects)
        node.attributes["isDirty"] = not node.attributes["isDirty"]
        store.upsert_node(node)

    table.latency("update: metadata-only change", timed(flip, args.updates))
    removed = iter(range(len(new_labels)))
    table.latency(
        "update: remove node", timed(lambda: store.remove_node(f"N{next(removed)}"), len(new_labels))
    )
    for symbol in store.symbols():
        if symbol.startswith("M"):
            store.remove_node(symbol)  # the batch-added nodes are not in the graph; keep the re-sync clean
    graph.node("O0").attributes["isDirty"] = not graph.node("O0").attributes["isDirty"]
    t0 = time.perf_counter()
    report = store.sync(graph)
    table.add(
        "re-sync whole graph after 1 change",
        f"{time.perf_counter() - t0:.2f} s",
        f"({report.changed} changed, {report.texts_embedded} texts embedded)",
    )


def bench_distinct_vectors(dim: int, args: argparse.Namespace, table: Table) -> None:
    import faiss

    rng = np.random.default_rng(2)
    vectors = rng.standard_normal((args.nodes, dim)).astype(np.float32)
    ids = [f"X{i}" for i in range(args.nodes)]
    metas = [{"class": NOUNS[i % len(NOUNS)], "room": f"R{i % 200}"} for i in range(args.nodes)]
    index = VectorIndex(dim)
    t0 = time.perf_counter()
    index.add(ids, vectors, metas)
    table.add(f"worst case: add {args.nodes} distinct vectors", f"{time.perf_counter() - t0:.2f} s")
    queries = rng.standard_normal((args.queries, dim)).astype(np.float32)
    counter = iter(range(10**9))
    samples = timed(lambda: index.search(queries[next(counter) % args.queries], 10), args.queries)
    table.latency("worst case: top-10 search", samples)
    samples = timed(
        lambda: index.search(queries[next(counter) % args.queries], 10, filter={"room": "R7"}), args.queries
    )
    table.latency("worst case: top-10 search, filter room", samples)
    samples = timed(lambda: index.upsert([ids[next(counter) % args.nodes]], queries[0]), 200)
    table.latency("worst case: upsert existing id (new vector)", samples)
    samples = timed(lambda: index.delete([ids[next(counter) % args.nodes]]), 200)
    table.latency("worst case: delete one id", samples)
    if args.hnsw:
        hnsw = faiss.IndexHNSWFlat(dim, 32, faiss.METRIC_INNER_PRODUCT)
        unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
        t0 = time.perf_counter()
        hnsw.add(unit)
        table.add("reference: faiss HNSW32 build (no deletes)", f"{time.perf_counter() - t0:.1f} s")
        samples = timed(lambda: hnsw.search(queries[next(counter) % args.queries][None, :], 10), args.queries)
        table.latency("reference: faiss HNSW32 top-10 search", samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--captions", type=float, default=0.02, help="fraction of objects with a caption")
    parser.add_argument("--threads", type=int, default=1, help="torch threads for the embedding model")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--updates", type=int, default=200)
    parser.add_argument("--hnsw", action="store_true", help="also time a faiss HNSW index (reference only)")
    add_record_argument(parser)
    args = parser.parse_args()
    record = BenchRecord(args, embedder="all-MiniLM-L6-v2 (minilm)", llm="none")
    import faiss

    print(
        f"cores: {os.cpu_count()}, torch threads: {args.threads}, faiss threads: {faiss.omp_get_max_threads()}"
    )
    table = Table()
    t0 = time.perf_counter()
    embedder = make_embedder("minilm", threads=args.threads)
    table.add("model load (process, incl. imports)", f"{time.perf_counter() - t0:.1f} s")
    bench_embedding(embedder, table)
    bench_entity_store(embedder, args, table)
    gc.collect()
    bench_distinct_vectors(embedder.dim, args, table)
    table.print()
    record.results["rows"] = table.data
    record.write()


if __name__ == "__main__":
    main()
