"""VectorIndex: ids, upserts, deletes, shared vectors, exact filtered search, persistence, concurrency."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from scenerag.errors import SceneRagError
from scenerag.retrieval import vector_index
from scenerag.retrieval.vector_index import (
    FilterError,
    IndexMismatchError,
    VectorIndex,
    VectorIndexError,
    compile_filter,
)

DIM = 16


def unit(rng: np.random.Generator, n: int, dim: int = DIM) -> np.ndarray:
    v = rng.standard_normal((n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def brute_force(
    vectors: dict[str, np.ndarray],
    metas: dict[str, dict[str, Any]],
    query: np.ndarray,
    k: int,
    keep: Any = None,
) -> list[tuple[str, float]]:
    q = query / np.linalg.norm(query)
    scored = [(id, float(v @ q)) for id, v in vectors.items() if keep is None or keep(metas[id])]
    scored.sort(key=lambda t: -t[1])
    return scored[:k]


class FakeEmbedder:
    def __init__(self, name: str, dim: int) -> None:
        self.name, self.dim = name, dim

    def embed(self, texts: Any, *, batch_size: int = 64, progress: Any = None) -> np.ndarray:
        raise AssertionError("not used")


@pytest.fixture
def populated() -> tuple[VectorIndex, dict[str, np.ndarray], dict[str, dict[str, Any]]]:
    rng = np.random.default_rng(7)
    n = 2000
    vectors = unit(rng, n)
    rooms = [f"R{i}" for i in range(20)]
    ids = [f"O{i}" for i in range(n)]
    metas = {
        id: {
            "class": ["mug", "chair", "table", "sofa"][i % 4],
            "room": rooms[i % 20],
            "isDirty": i % 3 == 0,
            "temperature": ["Hot", "Cold", "RoomTemp"][i % 3] if i % 5 else None,
            "height": float(i % 100) / 10.0,
            "floor": i % 2,
            "tags": ["a", "b"] if i % 7 == 0 else ["c"],
        }
        for i, id in enumerate(ids)
    }
    index = VectorIndex(DIM, embedder_name="fake")
    index.add(ids, vectors, [metas[id] for id in ids])
    return index, dict(zip(ids, vectors, strict=True)), metas


def test_add_get_len_and_exact_unfiltered_ranking(populated: Any) -> None:
    index, vectors, metas = populated
    assert len(index) == 2000 and index.num_vectors == 2000
    entry = index.get("O5")
    assert entry is not None and np.allclose(entry.vector, vectors["O5"], atol=1e-6)
    assert entry.metadata == metas["O5"]
    assert index.get("nope") is None
    query = unit(np.random.default_rng(1), 1)[0]
    hits = index.search(query, 10)
    expected = brute_force(vectors, metas, query, 10)
    assert [h.id for h in hits] == [id for id, _ in expected]
    assert np.allclose([h.score for h in hits], [s for _, s in expected], atol=1e-5)
    assert hits[0].metadata == metas[hits[0].id]


def test_duplicate_ids_and_bad_input_are_refused() -> None:
    index = VectorIndex(4)
    index.add(["a"], np.eye(4, dtype=np.float32)[:1])
    with pytest.raises(VectorIndexError, match="already in the index"):
        index.add(["a"], np.eye(4, dtype=np.float32)[:1])
    with pytest.raises(VectorIndexError, match="duplicates"):
        index.upsert(["b", "b"], np.eye(4, dtype=np.float32)[:2])
    with pytest.raises(VectorIndexError, match="shape"):
        index.add(["c"], np.ones((1, 3), dtype=np.float32))
    with pytest.raises(VectorIndexError, match="all-zero"):
        index.add(["c"], np.zeros((1, 4), dtype=np.float32))
    with pytest.raises(VectorIndexError, match="NaN"):
        index.add(["c"], np.full((1, 4), np.nan, dtype=np.float32))
    with pytest.raises(VectorIndexError, match="single string"):
        index.add("c", np.ones((1, 4), dtype=np.float32))
    with pytest.raises(VectorIndexError, match="type dict"):
        index.add(["c"], np.ones((1, 4), dtype=np.float32), [{"nested": {"a": 1}}])
    assert isinstance(VectorIndexError("x"), SceneRagError)
    assert index.ids() == ["a"]


def test_upsert_replaces_vector_and_metadata(populated: Any) -> None:
    index, vectors, _ = populated
    target = vectors["O42"]
    # move O7 onto O42's direction with new metadata: it must now rank with it, carrying the new metadata
    index.upsert(["O7"], target[None, :], [{"class": "kettle", "room": "R99"}])
    hits = index.search(target, 2)
    assert {h.id for h in hits} == {"O7", "O42"}
    got = {h.id: h for h in hits}
    assert got["O7"].metadata == {"class": "kettle", "room": "R99"}
    assert got["O7"].score == pytest.approx(1.0, abs=1e-5)
    # the old vector of O7 no longer finds it
    assert "O7" not in [h.id for h in index.search(vectors["O7"], 5)]
    # upsert without metadata keeps metadata; update_metadata keeps the vector
    index.upsert(["O7"], vectors["O7"][None, :])
    assert index.metadata("O7") == {"class": "kettle", "room": "R99"}
    index.update_metadata("O7", {"class": "mug"})
    assert index.search(vectors["O7"], 1)[0].id == "O7"
    assert index.search(vectors["O7"], 1, filter={"class": "kettle"}) == []
    assert len(index) == 2000


def test_deleted_ids_are_never_returned(populated: Any) -> None:
    index, vectors, metas = populated
    rng = np.random.default_rng(3)
    few = ["O1", "O2", "O3"]  # swap-with-last path
    many = [f"O{i}" for i in range(100, 400)]  # compaction path
    assert index.delete(few) == 3
    assert index.delete([*many, "missing"]) == len(many)
    assert index.delete("O1") == 0
    gone = set(few) | set(many)
    for id in gone:
        vectors.pop(id)
        assert id not in index and index.get(id) is None
    assert len(index) == 2000 - len(gone) == index.num_vectors
    for query in unit(rng, 20):
        hits = index.search(query, 25)
        assert not gone & {h.id for h in hits}
        assert [h.id for h in hits] == [id for id, _ in brute_force(vectors, metas, query, 25)]
    # every surviving id is still reachable through its own vector
    for id in ["O0", "O4", "O99", "O400", "O1999"]:
        assert index.search(vectors[id], 1)[0].id == id


def test_identical_vectors_share_a_row_and_all_ids_are_returned() -> None:
    index = VectorIndex(8)
    chair = np.ones(8, dtype=np.float32)
    table = np.arange(1, 9, dtype=np.float32)
    ids = [f"O{i}" for i in range(50)]
    index.add(
        ids,
        np.stack([chair if i % 2 == 0 else table for i in range(50)]),
        [{"room": f"R{i % 5}"} for i in range(50)],
    )
    assert len(index) == 50 and index.num_vectors == 2
    hits = index.search(chair, 30)
    assert {h.id for h in hits[:25]} == {f"O{i}" for i in range(0, 50, 2)}  # all chairs tie at the top
    assert all(h.score == pytest.approx(1.0) for h in hits[:25])
    assert {h.id for h in hits[25:]} <= {f"O{i}" for i in range(1, 50, 2)}
    filtered = index.search(chair, 10, filter={"room": "R3"})
    assert {h.id for h in filtered} == {f"O{i}" for i in range(50) if i % 5 == 3}
    assert {h.id for h in filtered[:5]} == {f"O{i}" for i in range(50) if i % 5 == 3 and i % 2 == 0}
    # moving every chair away frees the shared row
    index.delete([f"O{i}" for i in range(0, 50, 2)])
    assert index.num_vectors == 1 and len(index) == 25
    assert all(h.id in {f"O{i}" for i in range(1, 50, 2)} for h in index.search(chair, 5))


FILTER_CASES: list[tuple[dict[str, Any], Any]] = [
    ({"class": "mug"}, lambda m: m["class"] == "mug"),
    ({"class": "mug", "isDirty": True}, lambda m: m["class"] == "mug" and m["isDirty"] is True),
    ({"room": {"$in": ["R3", "R17"]}}, lambda m: m["room"] in ("R3", "R17")),
    ({"temperature": {"$ne": "Hot"}}, lambda m: m["temperature"] != "Hot"),
    ({"temperature": {"$nin": ["Hot", "Cold"]}}, lambda m: m["temperature"] not in ("Hot", "Cold")),
    ({"temperature": None}, lambda m: m["temperature"] is None),
    ({"height": {"$gte": 2.0, "$lt": 2.5}}, lambda m: 2.0 <= m["height"] < 2.5),
    (
        {"height": {"$gt": 9.8}, "class": {"$ne": "sofa"}},
        lambda m: m["height"] > 9.8 and m["class"] != "sofa",
    ),
    ({"floor": 1, "isDirty": False}, lambda m: m["floor"] == 1 and m["isDirty"] is False),
    ({"floor": 1.0}, lambda m: m["floor"] == 1),
    ({"isDirty": 1}, lambda m: False),  # booleans never equal numbers
    ({"tags": "a"}, lambda m: "a" in m["tags"]),
    ({"tags": {"$nin": ["a"]}}, lambda m: "a" not in m["tags"]),
    (
        {"$or": [{"class": "sofa", "room": "R1"}, {"height": {"$lte": 0.0}}]},
        lambda m: (m["class"] == "sofa" and m["room"] == "R1") or m["height"] <= 0.0,
    ),
    (
        {"$and": [{"room": "R2"}, {"room": {"$in": ["R2", "R4"]}}], "class": "mug"},
        lambda m: m["room"] == "R2" and m["class"] == "mug",
    ),
    ({"missing_field": {"$exists": False}, "room": "R0"}, lambda m: m["room"] == "R0"),
    ({"temperature": {"$exists": True}, "class": "table"}, lambda m: m["class"] == "table"),
    ({"class": "unicorn"}, lambda m: False),
]


@pytest.mark.parametrize(("spec", "keep"), FILTER_CASES)
def test_filters_are_exact_even_when_most_top_hits_fail(
    populated: Any, spec: dict[str, Any], keep: Any
) -> None:
    index, vectors, metas = populated
    rng = np.random.default_rng(11)
    assert index.count(spec) == sum(1 for m in metas.values() if keep(m))
    for query in unit(rng, 5):
        for k in (1, 10, 40):
            hits = index.search(query, k, filter=spec)
            expected = brute_force(vectors, metas, query, k, keep)
            assert [h.id for h in hits] == [id for id, _ in expected], spec
            assert all(keep(h.metadata) for h in hits)


def test_heavy_filter_on_near_duplicates_falls_back_to_a_filtered_scan(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The 500 best vectors all fail the filter; the few matching ids rank far below them."""
    rng = np.random.default_rng(5)
    query = unit(rng, 1)[0]
    close = query + 0.05 * unit(rng, 500)
    far = unit(rng, 1500)
    vectors = np.concatenate([close, far])
    ids = [f"P{i}" for i in range(2000)]
    metas = [
        {"kind": "close", "score_band": 1} if i < 500 else {"kind": "far", "score_band": i % 50}
        for i in range(2000)
    ]
    index = VectorIndex(DIM)
    index.add(ids, vectors, metas)
    as_dict = dict(zip(ids, vectors / np.linalg.norm(vectors, axis=1, keepdims=True), strict=True))
    meta_dict = dict(zip(ids, metas, strict=True))
    cases: list[tuple[dict[str, Any], Any]] = [
        ({"kind": "far"}, lambda m: m["kind"] == "far"),  # inverted index
        ({"score_band": {"$gte": 48}}, lambda m: m["score_band"] >= 48),  # numeric column
        ({"kind": {"$ne": "close"}}, lambda m: m["kind"] != "close"),  # over-fetch fails, then full scan
        ({"$or": [{"score_band": 3}, {"score_band": 4}]}, lambda m: m["score_band"] in (3, 4)),
    ]
    for spec, keep in cases:
        hits = index.search(query, 10, filter=spec)
        assert [h.id for h in hits] == [id for id, _ in brute_force(as_dict, meta_dict, query, 10, keep)]
    # with the direct exact path disabled, index terms go through over-fetch and then exact resolution
    monkeypatch.setattr(vector_index, "_EXACT_PATH_MIN", 0)
    for spec, keep in cases[:2]:
        hits = index.search(query, 10, filter=spec)
        assert [h.id for h in hits] == [id for id, _ in brute_force(as_dict, meta_dict, query, 10, keep)]


def test_numeric_filters_on_list_values_and_after_row_moves() -> None:
    rng = np.random.default_rng(8)
    n = 600
    vectors = unit(rng, n)
    ids = [f"O{i}" for i in range(n)]
    metas: list[dict[str, Any]] = [
        {"size": [float(i % 10), float(i % 10) + 20.0]} if i % 4 == 0 else {"size": float(i % 30), "n": i}
        for i in range(n)
    ]
    index = VectorIndex(DIM)
    index.add(ids, vectors, metas)
    index.delete([f"O{i}" for i in range(0, n, 3)])  # moves id rows and their column values
    index.update_metadata("O1", {"size": "big"})  # no longer numeric
    kept = {id: v for i, (id, v) in enumerate(zip(ids, vectors, strict=True)) if i % 3}
    meta_of = {id: m for i, (id, m) in enumerate(zip(ids, metas, strict=True)) if i % 3}
    meta_of["O1"] = {"size": "big"}

    def in_range(m: dict[str, Any]) -> bool:
        values = m["size"] if isinstance(m["size"], list) else [m["size"]]
        return any(not isinstance(v, str) and 24.0 <= v < 27.0 for v in values)

    query = unit(rng, 1)[0]
    for spec, keep in [
        ({"size": {"$gte": 24, "$lt": 27}}, in_range),
        (
            {"size": {"$gte": 24, "$lt": 27}, "n": {"$lte": 400}},
            lambda m: in_range(m) and m.get("n", 1e9) <= 400,
        ),
        ({"n": 301}, lambda m: m.get("n") == 301),
        ({"size": "big"}, lambda m: m["size"] == "big"),
    ]:
        hits = index.search(query, 15, filter=spec)
        assert [h.id for h in hits] == [id for id, _ in brute_force(kept, meta_of, query, 15, keep)], spec
        assert index.count(spec) == sum(1 for m in meta_of.values() if keep(m))


def test_min_score_and_batch_search(populated: Any) -> None:
    index, vectors, _ = populated
    queries = np.stack([vectors["O10"], vectors["O20"]])
    batch = index.search_batch(queries, 3)
    assert [hits[0].id for hits in batch] == ["O10", "O20"]
    strict = index.search(vectors["O10"], 50, min_score=0.5)
    assert strict and all(h.score >= 0.5 for h in strict)
    assert len(strict) == sum(1 for v in vectors.values() if float(v @ vectors["O10"]) >= 0.5)
    filtered = index.search(vectors["O10"], 50, filter={"class": "chair"}, min_score=0.3)
    assert all(h.score >= 0.3 and h.metadata["class"] == "chair" for h in filtered)
    assert index.search(vectors["O10"], 0) == []
    assert VectorIndex(DIM).search(vectors["O10"], 5) == []


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"class": {"$regex": "m.*"}}, "unknown filter operator"),
        ({"$nor": []}, "unknown filter operator"),
        ({"room": {"$in": "R1"}}, "needs a list"),
        ({"height": {"$gt": True}}, "number or a string"),
        ({"class": {"a": 1}}, "unknown filter operator"),
        ({"class": {}}, "empty"),
        ({"$or": []}, "non-empty list"),
        ({"class": [1, 2]}, "not a string"),
    ],
)
def test_bad_filters_raise_filter_error(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(FilterError, match=message):
        compile_filter(spec)


def test_save_load_round_trip_and_embedder_mismatch(tmp_path: Path, populated: Any) -> None:
    index, vectors, _ = populated
    index.delete(["O0", "O1"])
    index.extra["owner"] = {"note": "kept"}
    target = index.save(tmp_path / "vectors")
    index.upsert(["O2"], vectors["O3"][None, :])
    index.save(target)  # a second save replaces the first; the old faiss file is cleaned up
    assert len(list(target.glob("vectors.*.faiss"))) == 1
    loaded = VectorIndex.load(target, embedder=FakeEmbedder("fake", DIM))
    assert len(loaded) == len(index) and loaded.num_vectors == index.num_vectors
    assert loaded.embedder_name == "fake" and loaded.extra == {"owner": {"note": "kept"}}
    query = unit(np.random.default_rng(2), 1)[0]
    for spec in (None, {"class": "mug", "room": {"$in": ["R4", "R8"]}}, {"height": {"$lt": 1.0}}):
        assert [(h.id, round(h.score, 5), h.metadata) for h in loaded.search(query, 15, filter=spec)] == [
            (h.id, round(h.score, 5), h.metadata) for h in index.search(query, 15, filter=spec)
        ]
    assert loaded.get("O0") is None
    loaded.upsert(["O0"], vectors["O0"][None, :], [{"class": "new"}])  # a loaded index stays writable
    assert loaded.search(vectors["O0"], 1)[0].id == "O0"

    with pytest.raises(IndexMismatchError, match="built with embedder 'fake'"):
        VectorIndex.load(target, embedder=FakeEmbedder("other-model", DIM))
    with pytest.raises(IndexMismatchError, match="dim 16"):
        VectorIndex.load(target, embedder=FakeEmbedder("fake", 384))
    with pytest.raises(VectorIndexError, match=r"meta\.json is missing"):
        VectorIndex.load(tmp_path / "nothing")
    meta = json.loads((target / "meta.json").read_text())
    meta["rows"] = meta["rows"][:-1]
    (target / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(VectorIndexError, match="does not match"):
        VectorIndex.load(target)


def test_one_writer_and_concurrent_readers_stay_consistent() -> None:
    rng = np.random.default_rng(9)
    index = VectorIndex(DIM)
    stable = unit(rng, 200)
    index.add([f"S{i}" for i in range(200)], stable, [{"kind": "stable"}] * 200)
    errors: list[BaseException] = []
    stop = threading.Event()

    def reader(seed: int) -> None:
        local = np.random.default_rng(seed)
        try:
            while not stop.is_set():
                i = int(local.integers(200))
                hits = index.search(stable[i], 3, filter={"kind": "stable"})
                assert hits[0].id == f"S{i}"
                for hit in index.search(stable[i], 5):
                    assert hit.metadata["kind"] in ("stable", "churn")
        except BaseException as exc:  # surfaced in the main thread
            errors.append(exc)

    threads = [threading.Thread(target=reader, args=(seed,)) for seed in range(3)]
    for t in threads:
        t.start()
    churn = unit(np.random.default_rng(10), 300)
    for round_ in range(30):
        ids = [f"C{(round_ * 7 + j) % 60}" for j in range(10)]
        index.upsert(ids, churn[round_ * 10 : round_ * 10 + 10], [{"kind": "churn"}] * 10)
        index.delete(ids[:3])
    stop.set()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    assert len(index) == index.num_vectors == len(set(index.ids()))


def test_random_operation_sequence_matches_a_reference_model() -> None:
    """Upserts, deletes and metadata updates over ids sharing a few vectors (row reuse, swaps, compaction)."""
    rng = np.random.default_rng(21)
    pool = unit(rng, 12)  # few distinct vectors, so many ids share rows
    index = VectorIndex(DIM)
    model_vec: dict[str, np.ndarray] = {}
    model_meta: dict[str, dict[str, Any]] = {}
    for step in range(400):
        op = rng.random()
        if op < 0.55:
            ids = [f"N{int(i)}" for i in rng.choice(80, size=int(rng.integers(1, 6)), replace=False)]
            rows = pool[rng.integers(len(pool), size=len(ids))]
            metas = [{"step": step, "parity": int(i[1:]) % 2} for i in ids]
            index.upsert(ids, rows, metas)
            model_vec.update(zip(ids, rows, strict=True))
            model_meta.update(zip(ids, metas, strict=True))
        elif op < 0.9:
            ids = [f"N{int(i)}" for i in rng.choice(80, size=int(rng.integers(1, 30)), replace=False)]
            assert index.delete(ids) == sum(1 for i in ids if i in model_vec)
            for i in ids:
                model_vec.pop(i, None)
                model_meta.pop(i, None)
        elif model_vec:
            target = sorted(model_vec)[int(rng.integers(len(model_vec)))]
            model_meta[target] = {"step": -1, "parity": 2}
            index.update_metadata(target, model_meta[target])
        assert len(index) == len(model_vec)
        assert index.num_vectors == len({v.tobytes() for v in model_vec.values()})
        if step % 20 == 0 and model_vec:
            query = unit(rng, 1)[0]
            for spec, keep in [
                (None, None),
                ({"parity": 1}, lambda m: m["parity"] == 1),
                ({"step": {"$gte": step - 40}}, lambda m, lo=step - 40: m["step"] >= lo),
            ]:
                hits = index.search(query, len(model_vec), filter=spec)
                expected = brute_force(model_vec, model_meta, query, len(model_vec), keep)
                assert {h.id for h in hits} == {id for id, _ in expected}
                assert np.allclose([h.score for h in hits], [s for _, s in expected], atol=1e-5)
                assert all(h.metadata == model_meta[h.id] for h in hits)
                top = index.search(query, 3, filter=spec)  # ties between shared rows: compare scores
                assert np.allclose([h.score for h in top], [s for _, s in expected[:3]], atol=1e-5)
                assert all(keep is None or keep(model_meta[h.id]) for h in top)
