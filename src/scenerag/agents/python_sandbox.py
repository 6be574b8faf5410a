"""Run LLM-written Python against a ``SceneGraph`` in a child process with a time limit, a memory limit,
a restricted set of builtins and importable modules, and a cap on the output.

This guards against accidents (infinite loops, huge outputs, a stray ``open``), not against an attacker:
for untrusted models run scenerag itself in a container.
"""

from __future__ import annotations

import builtins
import contextlib
import io
import multiprocessing as mp
import resource
import traceback
from dataclasses import dataclass
from typing import Any

from scenerag.graph.model import SceneGraph

ALLOWED_MODULES = frozenset(
    {"math", "statistics", "collections", "itertools", "heapq", "functools", "re", "numpy"}
)
_SAFE_BUILTINS = [
    "abs",
    "all",
    "any",
    "bool",
    "dict",
    "divmod",
    "enumerate",
    "filter",
    "float",
    "frozenset",
    "getattr",
    "hasattr",
    "int",
    "isinstance",
    "len",
    "list",
    "map",
    "max",
    "min",
    "next",
    "print",
    "range",
    "repr",
    "reversed",
    "round",
    "set",
    "slice",
    "sorted",
    "str",
    "sum",
    "tuple",
    "zip",
    "ValueError",
    "KeyError",
    "TypeError",
    "IndexError",
    "Exception",
    "StopIteration",
    "ZeroDivisionError",
    "AttributeError",
    "True",
    "False",
    "None",
]


@dataclass
class SandboxResult:
    """What the code produced: ``result`` variable (repr) and printed output, or the error."""

    ok: bool
    output: str
    error: str | None = None


def _guarded_import(
    name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0
) -> Any:
    if name.split(".")[0] not in ALLOWED_MODULES:
        raise ImportError(
            f"import of {name!r} is not allowed here; allowed: {', '.join(sorted(ALLOWED_MODULES))}"
        )
    return builtins.__import__(name, globals, locals, fromlist, level)


def _child(code: str, graph: SceneGraph, conn: Any, memory_mb: int, max_chars: int) -> None:
    with contextlib.suppress(ValueError, OSError):
        limit = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    safe = {name: getattr(builtins, name) for name in _SAFE_BUILTINS if hasattr(builtins, name)}
    safe["__import__"] = _guarded_import
    import math

    namespace: dict[str, Any] = {"__builtins__": safe, "graph": graph, "math": math, "result": None}
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(code, "<llm-code>", "exec"), namespace)
        printed = out.getvalue()
        result = namespace.get("result")
        text = (printed + (f"result = {result!r}" if result is not None else "")).strip() or "(no output)"
        conn.send(SandboxResult(True, text[:max_chars] + (" ... [cut]" if len(text) > max_chars else "")))
    except BaseException as exc:  # the child reports every failure of the code, then exits
        tb = traceback.format_exception_only(type(exc), exc)[-1].strip()
        conn.send(SandboxResult(False, out.getvalue()[:max_chars], tb))
    finally:
        conn.close()


def run_python(
    code: str, graph: SceneGraph, *, timeout_s: float = 10.0, memory_mb: int = 2048, max_chars: int = 4000
) -> SandboxResult:
    """Execute ``code`` with ``graph`` (and ``math``) in scope; the answer is the ``result`` variable or what
    the code prints. The child is forked, so the graph is shared copy-on-write, not pickled."""
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(code, graph, child, memory_mb, max_chars), daemon=True)
    proc.start()
    child.close()
    try:
        if parent.poll(timeout_s):
            try:
                res: SandboxResult = parent.recv()
            except EOFError:
                res = SandboxResult(False, "", "the code crashed the interpreter (memory limit?)")
        else:
            res = SandboxResult(False, "", f"timeout: the code ran longer than {timeout_s:g} s")
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join(5)
        parent.close()
    return res
