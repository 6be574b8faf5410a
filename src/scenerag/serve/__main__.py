"""``python -m scenerag.serve --db DIR [--stdio]``: run the server without the full CLI (MCP client configs,
benchmarks). Same switches as ``scenerag serve``; the token may come from ``$SCENERAG_TOKEN``.
"""

from __future__ import annotations

import argparse
import os
import sys

from scenerag.errors import SceneRagError
from scenerag.serve.config import DEFAULT_HOST, DEFAULT_PORT, ServerConfig


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scenerag.serve", description=__doc__)
    parser.add_argument("--db", required=True, help="database directory or bolt:// URI")
    parser.add_argument("--host", default=DEFAULT_HOST)
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    parser.add_argument(
        "--token", default=None, help="bearer token (required off loopback; or $SCENERAG_TOKEN)"
    )
    parser.add_argument(
        "--llm",
        default=None,
        help="chat model spec for /ask and /ground: local (default, or $SCENERAG_LLM), openai:MODEL..., "
        "none; it loads in the background and /health says when it is ready",
    )
    parser.add_argument("--embedder", default=None, help="embedder spec for semantic retrieval (e.g. minilm)")
    parser.add_argument("--allow-write", action="store_true", help="let /cypher run writes that ask for it")
    parser.add_argument("--rate-limit", type=float, default=20.0, help="requests/s per client (0: no limit)")
    parser.add_argument("--burst", type=int, default=40, help="rate-limit burst size")
    parser.add_argument(
        "--query-slots", type=int, default=None, help="store queries run at once (default: the cores)"
    )
    parser.add_argument("--stdio", action="store_true", help="speak MCP over stdin/stdout instead of HTTP")
    args = parser.parse_args(argv)
    config = ServerConfig(
        rate_limit_per_s=args.rate_limit or None,
        rate_limit_burst=args.burst,
        query_slots=args.query_slots,
    )
    llm = args.llm if args.llm is not None else os.environ.get("SCENERAG_LLM") or "local"
    from scenerag.serve.run import serve, serve_mcp_stdio

    try:
        if args.stdio:
            serve_mcp_stdio(args.db, llm=llm, embedder=args.embedder, config=config)
        else:
            serve(
                args.db,
                args.host,
                args.port,
                args.token,
                llm=llm,
                allow_write=args.allow_write,
                embedder=args.embedder,
                config=config,
            )
    except SceneRagError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:  # SIGINT / SIGTERM after a clean shutdown
        return int(getattr(exc, "exit_code", 130))
    return 0


if __name__ == "__main__":
    sys.exit(main())
