"""Where the server's agents get their chat model: a spec string, a model instance, or a factory.

Contract: a spec (``"local"``, ``"openai:MODEL"``...) is turned into a model on first use, once; a shared
model (spec or instance) serves one agent run at a time, since local models are not thread-safe; a
factory (a zero-argument callable) builds a fresh model per run, and runs go in parallel. Without a
model, :meth:`ChatModelProvider.session` raises a 503 ``ServiceError`` saying how to configure one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from scenerag.llm.base import ChatModel
from scenerag.serve.errors import ServiceError

LlmSource = str | ChatModel | Callable[[], ChatModel] | None


class ChatModelProvider:
    """Hands out the chat model agents run with (see module docstring)."""

    def __init__(self, source: LlmSource) -> None:
        self._spec: str | None = None
        self._shared: ChatModel | None = None
        self._factory: Callable[[], ChatModel] | None = None
        if isinstance(source, str):
            self._spec = source
        elif source is not None and hasattr(source, "chat"):
            self._shared = source  # type: ignore[assignment]
        elif callable(source):
            self._factory = source
        elif source is not None:
            raise TypeError(
                f"llm must be a spec string, a chat model or a factory, not {type(source).__name__}"
            )
        self._create_lock = threading.Lock()
        self._use_lock = threading.Lock()

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

    def _shared_model(self) -> ChatModel:
        with self._create_lock:
            if self._shared is None:
                from scenerag.llm import make_chat_model

                assert self._spec is not None
                self._shared = make_chat_model(self._spec)
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
        model = self._shared_model()
        with self._use_lock:
            yield model
