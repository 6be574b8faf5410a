"""Wall time of ``scenerag demo`` as the README's quick start runs it once the environment exists: a fresh
process loads the Hydra example into a new embedded database, runs the Cypher examples, then lets the local
LLM answer a question and ground an instruction. Prints the median and worst of ``--runs`` processes and
how many of the LLM's answers were right; writes ``benchmarks/results/demo_bench.json``.

    python benchmarks/demo_bench.py [--runs 3] [--llm local]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_record import BenchRecord, add_record_argument

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("SCENERAG_DATA") or ROOT.parent / "shared" / "data")
HYDRA = DATA / "hydra_small_indoor_dsg.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="fresh demo processes")
    parser.add_argument("--llm", default="local", help="chat model spec (default: the offline local model)")
    add_record_argument(parser)
    args = parser.parse_args()
    if not HYDRA.exists():
        raise SystemExit(f"{HYDRA} not found: set SCENERAG_DATA to the shared data folder")
    record = BenchRecord(args, llm=args.llm, perception="oracle (the Hydra file as is)", embedder="minilm")
    walls, right = [], []
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="scenerag-demo-") as tmp:
            t0 = time.perf_counter()
            proc = subprocess.run(
                [sys.executable, "-m", "scenerag.cli", "demo", "--file", str(HYDRA), "--db", str(Path(tmp) / "db"),
                 "--llm", args.llm],
                capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"}, check=False,
            )  # fmt: skip
            walls.append(time.perf_counter() - t0)
        if proc.returncode != 0:
            raise SystemExit(f"scenerag demo failed:\n{proc.stderr}")
        right.append(sum(1 for line in proc.stdout.splitlines() if line.strip() == "correct"))
    print(f"scenerag demo ({args.llm}): median {statistics.median(walls):.1f} s, worst {max(walls):.1f} s over "
          f"{args.runs} runs; LLM answers right per run: {right} of 2")  # fmt: skip
    record.results.update(
        median_s=round(statistics.median(walls), 2),
        worst_s=round(max(walls), 2),
        samples_s=[round(w, 2) for w in walls],
        llm_right_per_run=right,
        llm_tasks=2,
    )
    record.write()


if __name__ == "__main__":
    main()
