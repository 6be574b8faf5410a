"""Where the server's agents get their chat model: a spec string, a model instance, or a factory.

Contract: a spec (``"local"``, ``"openai:MODEL"``...) is turned into a model once, on first use or, after
:meth:`ChatModelProvider.preload`, in a background thread started with the server (so the first question
does not pay for loading a local model); :attr:`ChatModelProvider.state` says ``"none"``, ``"not_loaded"``
(loads on first use), ``"loading"``, ``"ready"`` or ``"failed"`` without waiting. A shared model (spec or instance) serves one agent run at a
time, since local models are not thread-safe; at most ``max_waiting`` runs wait for it, each at most
``wait_s`` seconds, beyond which the caller gets a 503 ``ServiceError`` with ``Retry-After``. A factory (a
zero-argument callable) builds a fresh model per run, and runs go in parallel. Without a model,
:meth:`ChatModelProvider.session` raises a 503 ``ServiceError`` saying how to configure one.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Literal

from scenerag.llm.base import ChatModel
from scenerag.serve.errors import ServiceError

LlmSource = str | ChatModel | Callable[[], ChatModel] | None
ModelState = Literal["none", "not_loaded", "loading", "ready", "failed"]
#: ``--llm`` values that mean "no model"
NO_LLM = frozenset({"", "none", "off"})
DEFAULT_WAIT_S = 300.0
DEFAULT_MAX_WAITING = 4


class ChatModelProvider:
    """Hands out the chat model agents run with (see module docstring)."""

    def __init__(
        self,
        source: LlmSource,
        *,
        wait_s: float = DEFAULT_WAIT_S,
        max_waiting: int = DEFAULT_MAX_WAITING,
    ) -> None:
        self._spec: str | None = None
        self._shared: ChatModel | None = None
        self._factory: Callable[[], ChatModel] | None = None
        if isinstance(source, str):
            self._spec = None if source.strip().lower() in NO_LLM else source.strip()
        elif source is not None and hasattr(source, "chat"):
            self._shared = source  # type: ignore[assignment]
        elif callable(source):
            self._factory = source
        elif source is not None:
            raise TypeError(
                f"llm must be a spec string, a chat model or a factory, not {type(source).__name__}"
            )
        self.wait_s = float(wait_s)
        self.max_waiting = int(max_waiting)
        self._create_lock = threading.Lock()
        self._use_lock = threading.Lock()
        self._waiting = 0
        self._waiting_lock = threading.Lock()
        self._loader: threading.Thread | None = None
        self._load_started: float | None = None
        self._load_s: float | None = None
        self._error: BaseException | None = None

    @property
    def configured(self) -> bool:
        return self._spec is not None or self._shared is not None or self._factory is not None

    @property
    def description(self) -> str | None:
        """What the model is, for ``/health`` (None when there is none)."""
        if self._shared is not None:
            return str(getattr(self._shared, "name", type(self._shared).__name__))
        if self._spec is not None:
            return self._spec
        if self._factory is not None:
            return "factory"
        return None

    @property
    def state(self) -> ModelState:
        """``none`` (not configured), ``not_loaded`` (loads on first use), ``loading``, ``ready`` (or built
        per run), ``failed``; never waits."""
        if not self.configured:
            return "none"
        if self._shared is not None or self._factory is not None:
            return "ready"
        if self._error is not None:
            return "failed"
        return "loading" if self._load_started is not None else "not_loaded"

    def status(self) -> dict[str, Any]:
        """State, seconds spent loading (so far or in all) and the failure, for ``/health``."""
        out: dict[str, Any] = {"state": self.state, "ready": self.state == "ready"}
        if self._load_s is not None:
            out["load_s"] = round(self._load_s, 2)
        elif self._load_started is not None and self._error is None:
            out["loading_for_s"] = round(time.monotonic() - self._load_started, 1)
        if self._error is not None:
            out["error"] = str(self._error)
        return out

    def preload(self, *, on_ready: Callable[[], None] | None = None) -> None:
        """Start building the spec's model in a background thread (no-op for instances and factories);
        ``on_ready`` is called from that thread once the model loaded."""
        if self._spec is None or self._shared is not None or self._loader is not None:
            return
        self._load_started = time.monotonic()
        self._loader = threading.Thread(
            target=self._load_quietly, args=(on_ready,), name="scenerag-llm-load", daemon=True
        )
        self._loader.start()

    def _load_quietly(self, on_ready: Callable[[], None] | None) -> None:
        with contextlib.suppress(Exception):  # kept in self._error, reported by status() and session()
            self._shared_model()
            if on_ready is not None:
                on_ready()

    def _shared_model(self) -> ChatModel:
        with self._create_lock:
            if self._shared is None:
                if self._error is not None:
                    raise self._error
                from scenerag.llm import make_chat_model

                assert self._spec is not None
                start = time.monotonic()
                try:
                    self._shared = make_chat_model(self._spec)
                except Exception as exc:
                    self._error = exc
                    raise
                finally:
                    self._load_s = time.monotonic() - (self._load_started or start)
                self._load_started = None
            return self._shared

    @contextmanager
    def session(self) -> Iterator[ChatModel]:
        """The model for one agent run (held exclusively for a shared model)."""
        if not self.configured:
            raise ServiceError(
                "llm_unavailable",
                "no language model is configured, so questions cannot be answered nor instructions grounded",
                status=503,
                hint="start with an LLM (--llm local | openai:MODEL | anthropic:MODEL); Cypher queries, the "
                "schema and subgraph retrieval work without one",
            )
        if self._factory is not None:
            yield self._factory()
            return
        with self._waiting_lock:
            if self._waiting >= self.max_waiting:
                raise ServiceError(
                    "overloaded",
                    f"the language model is busy: {self._waiting} questions are already waiting for it",
                    status=503,
                    hint="retry in a while",
                    retry_after_s=30,
                )
            self._waiting += 1
        try:
            if not self._use_lock.acquire(timeout=self.wait_s):
                raise ServiceError(
                    "overloaded",
                    f"the language model stayed busy for {self.wait_s:g} s",
                    status=503,
                    hint="retry in a while",
                    retry_after_s=30,
                )
        finally:
            with self._waiting_lock:
                self._waiting -= 1
        try:
            yield self._shared_model()
        finally:
            self._use_lock.release()
