"""Local-LLM benchmark: the one-time GGUF join, model load, prompt and generation tokens/s.

Usage::

    .venv/bin/python benchmarks/llm_bench.py                    # default Qwen2.5-Coder-1.5B Q4_K_M
    .venv/bin/python benchmarks/llm_bench.py --runs 5 --threads 2
    .venv/bin/python benchmarks/llm_bench.py --model /path/to/model.gguf --skip-join

Prints: the cost of joining the 22 PyPI parts into one GGUF (into a temporary folder, so the cache is left
alone) and of the reuse check that replaces it afterwards; model load time; and, as medians (min–max) over
``--runs`` runs, prompt-evaluation tokens/s at two prompt lengths, free generation tokens/s and
grammar-constrained (JSON schema) generation tokens/s, from llama.cpp's own timers. Each run's prompt
starts with a fresh nonce so the prompt cache cannot reuse an earlier run. Last, the client-side token
estimate against the model's tokenizer on a Cypher-and-prose sample. The figures and the run's conditions
(threads, machine load) go to ``benchmarks/results/llm_bench.json`` (``--record``).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from bench_record import BenchRecord, add_record_argument
from scenerag.llm import Message, estimate_tokens
from scenerag.llm.base import ChatResponse, GenerationTimings
from scenerag.llm.local import LocalChatModel, available_cores
from scenerag.llm.model_files import find_part_paths, join_parts

FILLER = (
    "The scene graph has floors, rooms, places and objects. Each room contains places, and each place "
    "contains objects such as chairs, tables, sofas, beds, sinks and lamps. "
)
SAMPLE = (
    "MATCH (f:Floor)-[:CONTAINS]->(r:Room)-[:CONTAINS*1..2]->(o:Object {class: 'chair'}) "
    "WHERE point.distance(o.center, point({x: 1.5, y: -2.0, z: 0.4})) < 3.0 "
    "RETURN r.nodeSymbol AS room, count(o) AS chairs ORDER BY chairs DESC LIMIT 5\n"
    "Which room on the second floor has the most chairs within three metres of the sofa?"
)


def stats(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


def summary(values: list[float], unit: str) -> str:
    return f"{statistics.median(values):8.1f} {unit}  ({min(values):.1f}–{max(values):.1f}, n={len(values)})"


def bench_join() -> dict[str, float]:
    parts = find_part_paths()
    total = sum(p.stat().st_size for p in parts)
    with tempfile.TemporaryDirectory(prefix="scenerag-join-") as tmp:
        dest = Path(tmp) / "model.gguf"
        start = time.perf_counter()
        join_parts(parts, dest)
        joined_s = time.perf_counter() - start
        start = time.perf_counter()
        join_parts(parts, dest)
        reuse_s = time.perf_counter() - start
    print(
        f"join {len(parts)} parts ({total / 2**20:.0f} MiB): {joined_s:6.2f} s "
        f"({total / 2**20 / joined_s:.0f} MiB/s); reuse check afterwards: {reuse_s * 1000:.1f} ms"
    )
    return {"parts": len(parts), "mib": total / 2**20, "join_s": joined_s, "reuse_check_s": reuse_s}


def timed_runs(runs: int, call: Callable[[str], ChatResponse]) -> list[GenerationTimings]:
    out: list[GenerationTimings] = []
    for _ in range(runs):
        response = call(uuid.uuid4().hex)
        if response.timings is None:
            raise SystemExit("llama.cpp timings are unavailable in this llama-cpp-python build")
        out.append(response.timings)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default=None, help="GGUF path (default: the joined Qwen2.5-Coder-1.5B)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--threads", type=int, default=None, help=f"default: available cores ({available_cores()})"
    )
    parser.add_argument("--n-ctx", type=int, default=4096)
    parser.add_argument("--gen-tokens", type=int, default=64)
    parser.add_argument("--skip-join", action="store_true", help="do not time the part join")
    add_record_argument(parser)
    args = parser.parse_args()
    record = BenchRecord(args, llm="live (llama-cpp-python, local GGUF)", model=args.model or "default")
    results = record.results

    if not args.skip_join and args.model is None:
        results["join"] = bench_join()
    start = time.perf_counter()
    model = LocalChatModel(args.model, n_ctx=args.n_ctx, n_threads=args.threads)
    results["model"] = model.name
    results["load_s"] = time.perf_counter() - start
    results["threads"] = model.n_threads
    results["n_ctx"] = model.context_window
    print(
        f"model {model.name}: loaded in {time.perf_counter() - start:.2f} s, "
        f"{model.n_threads} threads, n_ctx {model.context_window}"
    )

    for repeat in (2, 8):
        prompt = FILLER * repeat
        timings = timed_runs(
            args.runs,
            lambda nonce, p=prompt: model.chat(
                [Message.system(f"Session {nonce}."), Message.user(p + "Summarise.")], max_tokens=1
            ),
        )
        tokens = statistics.median(t.prompt_tokens for t in timings)
        print(
            f"prompt eval, ~{tokens:.0f} tokens:  "
            + summary([t.prompt_tokens_per_s for t in timings], "tok/s")
        )
        results.setdefault("prompt_eval", []).append(
            {"prompt_tokens": tokens, "tokens_per_s": stats([t.prompt_tokens_per_s for t in timings])}
        )

    timings = timed_runs(
        args.runs,
        lambda nonce: model.chat(
            [
                Message.system(f"Session {nonce}."),
                Message.user(
                    "Write a Python function that parses a 3D scene graph from JSON, with docstrings."
                ),
            ],
            max_tokens=args.gen_tokens,
        ),
    )
    print(
        f"generation, {args.gen_tokens} tokens:        "
        + summary([t.generation_tokens_per_s for t in timings], "tok/s")
    )
    results["generation_tokens_per_s"] = stats([t.generation_tokens_per_s for t in timings])

    schema = {
        "type": "object",
        "additionalProperties": False,
        "required": ["thought", "cypher"],
        "properties": {"thought": {"type": "string"}, "cypher": {"type": "string"}},
    }
    timings = timed_runs(
        args.runs,
        lambda nonce: model.chat(
            [
                Message.system(f"Session {nonce}. You write Neo4j Cypher over a scene graph."),
                Message.user("Count the chairs in each room; explain your reasoning briefly first."),
            ],
            response_schema=schema,
            max_tokens=512,
        ),
    )
    print(
        "generation, JSON-schema grammar:   " + summary([t.generation_tokens_per_s for t in timings], "tok/s")
    )
    results["grammar_generation_tokens_per_s"] = stats([t.generation_tokens_per_s for t in timings])

    exact = model.count_tokens(SAMPLE)
    print(
        f"token estimate vs tokenizer on a Cypher+prose sample: {estimate_tokens(SAMPLE)} vs {exact} "
        f"(ratio {estimate_tokens(SAMPLE) / exact:.2f})"
    )
    results["token_estimate"] = {"estimate": estimate_tokens(SAMPLE), "tokenizer": exact}
    record.write()


if __name__ == "__main__":
    main()
