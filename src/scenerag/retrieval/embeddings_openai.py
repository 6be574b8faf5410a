"""Embedder for OpenAI-compatible ``POST {base_url}/embeddings`` endpoints (OpenAI, vLLM, llama.cpp,
Ollama, LM Studio, TEI, ...), through the official ``openai`` SDK.

Contract: requests ask for ``encoding_format="float"`` (supported by every compatible server), at most
``batch_size`` texts each; rows come back in input order and L2-normalised; transient failures are
retried by the SDK (``max_retries``); an unreachable endpoint or an error status raises ``EmbeddingError``.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import numpy as np

from scenerag.retrieval.embeddings import DEFAULT_CACHE_SIZE, CachingEmbedder, EmbeddingError

DEFAULT_TIMEOUT_S = 30.0
DEFAULT_MAX_RETRIES = 2
NO_KEY = "not-needed"  # local servers ignore the key, but the SDK requires one


class OpenAIEmbedder(CachingEmbedder):
    """Embeds with ``model`` at ``base_url`` (default ``$OPENAI_BASE_URL`` or the OpenAI API).

    ``dim`` is probed with one request on first use unless given; ``dimensions`` asks models that support
    it (text-embedding-3-*) for shortened vectors.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        dim: int | None = None,
        dimensions: int | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_retries: int = DEFAULT_MAX_RETRIES,
        cache_size: int = DEFAULT_CACHE_SIZE,
        name: str | None = None,
    ) -> None:
        if not model or not model.strip():
            raise EmbeddingError("OpenAI-compatible embedder needs a model name", hint='use "openai:MODEL"')
        super().__init__(name=name or f"openai:{model}", cache_size=cache_size)
        try:
            import openai
        except ImportError as exc:
            raise EmbeddingError(
                "the openai package is not installed", hint="pip install 'scenerag[openai]'"
            ) from exc
        self.model = model
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        key = api_key or os.environ.get("OPENAI_API_KEY") or NO_KEY
        self._openai = openai
        self._client = openai.OpenAI(
            base_url=self.base_url, api_key=key, timeout=timeout_s, max_retries=max_retries
        )
        self._dimensions = dimensions
        self._dim = dim if dim is not None else dimensions
        self._dim_lock = threading.Lock()

    @property
    def dim(self) -> int:
        """Vector dimension; the first access without a configured ``dim`` sends one probe request."""
        if self._dim is None:
            with self._dim_lock:
                if self._dim is None:
                    self._dim = int(self._request(["dimension probe"]).shape[1])
        return self._dim

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        return self._request(texts)

    def _request(self, texts: list[str]) -> np.ndarray:
        openai = self._openai
        kwargs: dict[str, Any] = {"model": self.model, "input": texts, "encoding_format": "float"}
        if self._dimensions is not None:
            kwargs["dimensions"] = self._dimensions
        try:
            response = self._client.embeddings.create(**kwargs)
        except openai.APIConnectionError as exc:  # includes APITimeoutError
            raise EmbeddingError(
                f"cannot reach the embedding endpoint {self.base_url}: {exc}",
                hint="start the server or fix base_url (it should end in /v1)",
            ) from exc
        except openai.APIStatusError as exc:
            raise EmbeddingError(
                f"embedding endpoint {self.base_url} answered HTTP {exc.status_code} for model "
                f"{self.model!r}: {exc.message}",
                hint="check the model name and API key",
            ) from exc
        except openai.OpenAIError as exc:
            raise EmbeddingError(f"embedding request to {self.base_url} failed: {exc}") from exc
        data = sorted(response.data, key=lambda item: item.index)
        if len(data) != len(texts) or [item.index for item in data] != list(range(len(texts))):
            raise EmbeddingError(
                f"embedding endpoint {self.base_url} returned {len(data)} vectors for {len(texts)} texts"
            )
        try:
            vectors = np.asarray([item.embedding for item in data], dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise EmbeddingError(
                f"embedding endpoint {self.base_url} returned malformed vectors: {exc}"
            ) from exc
        if vectors.ndim != 2:
            raise EmbeddingError(f"embedding endpoint {self.base_url} returned vectors of unequal length")
        return vectors
