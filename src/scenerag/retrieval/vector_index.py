"""Exact cosine vector index keyed by string ids (node symbols), with metadata filters, on faiss-cpu.

Contract:
- Every id owns one L2-normalised vector and a flat metadata dict; scores are cosine similarities and
  search is exact (a faiss ``IndexFlatIP``). Ids whose vectors are bit-identical (thousands of nodes
  labelled "chair") share one stored row, so search cost grows with the number of distinct vectors.
- ``delete``d ids are never returned; ``upsert`` replaces an id's vector and/or metadata in O(dim) time
  (rows are overwritten in place and freed rows are swapped with the last one).
- Filters (see :func:`compile_filter`) are applied exactly. Selective clauses on string/boolean values
  (an inverted index) or numbers (columns by id) give the matching ids directly; otherwise hits are
  over-fetched and filtered, and when too few pass, the search is re-run restricted (faiss
  ``IDSelector``) to the rows of exactly the matching ids.
- ``save``/``load`` write a faiss file plus ``meta.json`` atomically and record the embedder's name and
  dimension; loading for a different embedder raises :class:`IndexMismatchError`.
- One writer and any number of readers may use an index from several threads at once.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import secrets
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from scenerag.concurrency import ReadWriteLock
from scenerag.errors import SceneRagError

if TYPE_CHECKING:
    from scenerag.retrieval.embeddings import Embedder

MetaValue = str | int | float | bool | None | list[str | int | float | bool]
Metadata = dict[str, MetaValue]
FilterSpec = Mapping[str, Any]

FORMAT_NAME = "scenerag-vector-index"
FORMAT_VERSION = 1
META_FILE = "meta.json"
_SWAP_DELETE_MAX = 8  # above this many freed rows in one call, compact in one O(n) pass instead
_OVERFETCH_FACTOR = 4  # a filtered search first fetches this many times k rows ...
_OVERFETCH_MIN = 64  # ... and at least this many
_OVERFETCH_BUDGET_PER_HIT = 64  # ... and checks at most this many ids per wanted hit before switching
_EXACT_PATH_MIN = 2048  # index terms selecting at most max(this, 5% of ids) go straight to the exact path


class VectorIndexError(SceneRagError):
    """Invalid use of a vector index (bad shape, duplicate id, bad metadata, unreadable files)."""


class FilterError(VectorIndexError):
    """A metadata filter that does not follow the filter grammar of :func:`compile_filter`."""


class IndexMismatchError(VectorIndexError):
    """A saved index was built with a different embedder (name or dimension) than the one given."""


@dataclass(frozen=True, slots=True)
class Hit:
    """One search result: the id, its cosine score and (a copy of) its metadata."""

    id: str
    score: float
    metadata: Metadata


@dataclass(frozen=True, slots=True)
class Entry:
    """A stored id with its (normalised) vector and metadata, as returned by :meth:`VectorIndex.get`."""

    id: str
    vector: np.ndarray
    metadata: Metadata


# -- metadata filters ---------------------------------------------------------------------------------

_COMPARISONS: dict[str, Callable[[Any, Any], bool]] = {
    "$gt": lambda a, b: a > b,
    "$gte": lambda a, b: a >= b,
    "$lt": lambda a, b: a < b,
    "$lte": lambda a, b: a <= b,
}
_FIELD_OPERATORS = frozenset({"$eq", "$ne", "$in", "$nin", "$exists", *_COMPARISONS})
_EqKey = tuple[str, Any]
Predicate = Callable[[Mapping[str, Any]], bool]


def _eq_key(value: Any, where: str) -> _EqKey:
    """Equality key: booleans equal only booleans, ints and floats compare numerically, None is None."""
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, (int, float)):
        return ("n", float(value))
    if isinstance(value, str):
        return ("s", value)
    if value is None:
        return ("z", None)
    raise FilterError(f"filter {where}: {value!r} is not a string, number, boolean or null")


def _value_keys(value: Any) -> list[_EqKey]:
    """Equality keys of a stored metadata value (a list contributes one key per element)."""
    items = value if isinstance(value, list) else [value]
    keys = []
    for item in items:
        if isinstance(item, bool):
            keys.append(("b", item))
        elif isinstance(item, (int, float)):
            keys.append(("n", float(item)))
        elif isinstance(item, str):
            keys.append(("s", item))
        elif item is None:
            keys.append(("z", None))
    return keys


def _orderable(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, (int, float)) and not isinstance(value, bool))


@dataclass(frozen=True, slots=True)
class CompiledFilter:
    """A validated filter: ``matches(metadata)`` plus the clauses an index can answer without calling it.

    Every match satisfies all terms. ``postings_terms``: ``(field, keys)``, the field equals one of these
    string/boolean keys; ``range_terms``: ``(field, op, bound)``, a numeric ``$eq $gt $gte $lt $lte``
    comparison; ``covered``: the terms together are exactly the filter.
    """

    matches: Predicate
    postings_terms: tuple[tuple[str, frozenset[_EqKey]], ...]
    range_terms: tuple[tuple[str, str, float], ...]
    covered: bool


class _Terms:
    """Index-answerable clauses collected from the top-level conjunction of a filter."""

    def __init__(self) -> None:
        self.postings: list[tuple[str, frozenset[_EqKey]]] = []
        self.ranges: list[tuple[str, str, float]] = []
        self.covered = True


def compile_filter(spec: FilterSpec) -> CompiledFilter:
    """Validate and compile a metadata filter.

    Grammar (MongoDB-like, over flat metadata)::

        {"class": "mug"}                                 equality (same as {"$eq": "mug"})
        {"isDirty": True, "floor": 2}                    several fields: all must hold
        {"room": {"$in": ["R1", "R2"]}}                  membership; "$nin" for non-membership
        {"temperature": {"$ne": "Hot"}}                  inequality
        {"x": {"$gte": 0.0, "$lt": 5.5}}                 numeric (or string) ranges: $gt $gte $lt $lte
        {"description": {"$exists": True}}              field present
        {"$or": [{...}, {...}]}, {"$and": [...]}         combinations

    Semantics: booleans equal only booleans; 1 equals 1.0; a list value matches a field's
    ``$eq``/``$in``/range conditions when one element satisfies all of them, and ``$ne``/``$nin`` when no
    element equals; a missing field counts as null for equality (so it matches ``$ne``/``$nin`` and
    ``{"f": None}``) and never satisfies a range.
    """
    if not isinstance(spec, Mapping):
        raise FilterError(f"a filter must be a dict, got {type(spec).__name__}")
    terms = _Terms()
    predicate = _compile_and(spec, terms)
    return CompiledFilter(predicate, tuple(terms.postings), tuple(terms.ranges), terms.covered)


def _compile_and(spec: Mapping[str, Any], terms: _Terms | None) -> Predicate:
    """Compile a conjunction; ``terms`` collects index-answerable clauses (None inside ``$or``)."""
    predicates: list[Predicate] = []
    for key, condition in spec.items():
        if not isinstance(key, str):
            raise FilterError(f"filter keys must be strings, got {key!r}")
        if key in ("$and", "$or"):
            if not isinstance(condition, (list, tuple)) or not condition:
                raise FilterError(f"filter {key} needs a non-empty list of filters")
            parts = []
            for sub in condition:
                if not isinstance(sub, Mapping):
                    raise FilterError(f"filter {key} items must be dicts, got {sub!r}")
                parts.append(_compile_and(sub, terms if key == "$and" else None))
            predicates.append(_all(parts) if key == "$and" else _any(parts))
            if key == "$or" and terms is not None:
                terms.covered = False
        elif key.startswith("$"):
            raise FilterError(f"unknown filter operator {key!r} at top level", hint="use $and or $or")
        else:
            predicates.append(_compile_field(key, condition, terms))
    return _all(predicates)


def _all(predicates: list[Predicate]) -> Predicate:
    if len(predicates) == 1:
        return predicates[0]
    return lambda meta: all(p(meta) for p in predicates)


def _any(predicates: list[Predicate]) -> Predicate:
    return lambda meta: any(p(meta) for p in predicates)


def _compile_field(field: str, condition: Any, terms: _Terms | None) -> Predicate:
    """Compile ``field: condition``, adding the clauses an index can answer to ``terms``.

    Positive conditions (``$eq $in $gt $gte $lt $lte``) must all hold for one element of a list value;
    ``$ne``/``$nin`` require that no element equals; ``$exists`` looks at the field itself.
    """
    if not isinstance(condition, Mapping):
        condition = {"$eq": condition}
    if not condition:
        raise FilterError(f"filter on {field!r} is an empty dict")
    element_tests: list[Callable[[Any], bool]] = []
    whole_tests: list[Predicate] = []
    for op, arg in condition.items():
        where = f"{field}.{op}"
        if op not in _FIELD_OPERATORS:
            raise FilterError(
                f"unknown filter operator {op!r} on field {field!r}",
                hint="use one of " + ", ".join(sorted(_FIELD_OPERATORS)),
            )
        answerable = False
        if op in ("$eq", "$ne", "$in", "$nin"):
            if op in ("$in", "$nin"):
                if not isinstance(arg, (list, tuple, set, frozenset)):
                    raise FilterError(f"filter {where} needs a list, got {arg!r}")
                keys = frozenset(_eq_key(v, where) for v in arg)
            else:
                keys = frozenset([_eq_key(arg, where)])
            if op in ("$ne", "$nin"):
                whole_tests.append(_none_equal(field, keys))
            else:
                element_tests.append(lambda item, keys=keys: any(k in keys for k in _value_keys(item)))
                if terms is not None and all(k[0] in ("s", "b") for k in keys):
                    terms.postings.append((field, keys))
                    answerable = True
                elif terms is not None and len(keys) == 1 and next(iter(keys))[0] == "n":
                    terms.ranges.append((field, "$eq", next(iter(keys))[1]))
                    answerable = True
        elif op == "$exists":
            if not isinstance(arg, bool):
                raise FilterError(f"filter {where} needs true or false, got {arg!r}")
            whole_tests.append(lambda meta, want=arg: (field in meta) == want)
        else:
            if not _orderable(arg):
                raise FilterError(f"filter {where} needs a number or a string, got {arg!r}")
            element_tests.append(_comparison(_COMPARISONS[op], arg))
            if terms is not None and not isinstance(arg, str):
                terms.ranges.append((field, op, float(arg)))
                answerable = True
        if terms is not None and not answerable:
            terms.covered = False

    def predicate(meta: Mapping[str, Any]) -> bool:
        if not all(test(meta) for test in whole_tests):
            return False
        if not element_tests:
            return True
        value = meta.get(field)
        items = value if isinstance(value, list) else (value,)
        return any(all(test(item) for test in element_tests) for item in items)

    return predicate


def _none_equal(field: str, keys: frozenset[_EqKey]) -> Predicate:
    """``$ne`` / ``$nin``: the value (or no element of a list value) equals any of ``keys``."""
    return lambda meta: not any(key in keys for key in _value_keys(meta.get(field)))


def _comparison(compare: Callable[[Any, Any], bool], bound: Any) -> Callable[[Any], bool]:
    """Range test of one scalar: numbers compare with numbers, strings with strings, nothing else."""
    bound_is_str = isinstance(bound, str)

    def ok(value: Any) -> bool:
        if not _orderable(value) or isinstance(value, str) != bound_is_str:
            return False
        return bool(compare(value, bound))

    return ok


# -- metadata validation ------------------------------------------------------------------------------


def check_metadata(metadata: Mapping[str, Any], owner: str) -> Metadata:
    """Copy and validate metadata: string keys, JSON scalar or flat-list values, finite numbers."""
    if not isinstance(metadata, Mapping):
        raise VectorIndexError(f"{owner}: metadata must be a dict, got {type(metadata).__name__}")
    out: Metadata = {}
    for key, value in metadata.items():
        if not isinstance(key, str) or not key:
            raise VectorIndexError(f"{owner}: metadata key {key!r} must be a non-empty string")
        kind = type(value)
        if kind in (str, bool, int) or value is None or (kind is float and math.isfinite(value)):
            out[key] = value
        elif isinstance(value, (list, tuple)):
            items = list(value)
            for item in items:
                if type(item) is not float or not math.isfinite(item):
                    _check_scalar(item, owner, key, allow_none=False)
            out[key] = items
        else:
            _check_scalar(value, owner, key, allow_none=True)
            out[key] = value
    return out


def _check_scalar(value: Any, owner: str, key: str, *, allow_none: bool) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, float) and not math.isfinite(value):
        raise VectorIndexError(f"{owner}: metadata {key!r} is {value}; only finite numbers are stored")
    if not isinstance(value, (str, int, float, bool)):
        raise VectorIndexError(
            f"{owner}: metadata {key!r} has a value of type {type(value).__name__}",
            hint="use strings, numbers, booleans, null or flat lists of them",
        )


# -- the index ------------------------------------------------------------------------------------------


_COLUMN_OPS: dict[str, Callable[[np.ndarray, float], np.ndarray]] = {
    "$eq": np.equal,
    "$gt": np.greater,
    "$gte": np.greater_equal,
    "$lt": np.less,
    "$lte": np.less_equal,
}


@dataclass(slots=True)
class _Candidates:
    """Index-side view of a filter: postings buckets per term, the numeric-column mask by id row, ids
    with list values in the range fields (checked one by one), and an upper bound on the matches."""

    postings: list[list[set[str]]]
    mask: np.ndarray | None
    listed: set[str]
    estimate: int


def _faiss() -> Any:
    try:
        import faiss
    except ImportError as exc:
        raise VectorIndexError(
            "faiss-cpu is not installed", hint="pip install 'scenerag[retrieval]'"
        ) from exc
    return faiss


def _digest(row: np.ndarray) -> bytes:
    return hashlib.blake2b(row.tobytes(), digest_size=16).digest()


class VectorIndex:
    """Exact cosine-similarity index over string ids with metadata filters (see the module docstring).

    ``search_threads`` is the number of faiss (OpenMP) threads one search uses; 1 is fastest for single
    queries on a few shared cores (OpenMP waits cost more than they save there), more helps big batches.
    """

    def __init__(self, dim: int, *, embedder_name: str | None = None, search_threads: int | None = 1) -> None:
        if not isinstance(dim, int) or dim < 1:
            raise VectorIndexError(f"vector dimension must be a positive integer, got {dim!r}")
        if search_threads is not None and search_threads < 1:
            raise VectorIndexError(f"search_threads must be >= 1 or None, got {search_threads}")
        faiss = _faiss()
        self._dim = dim
        self.embedder_name = embedder_name
        self.search_threads = search_threads
        self.extra: dict[str, Any] = {}
        """JSON-serialisable payload saved and loaded atomically with the index (owners' own state)."""
        self._flat = faiss.IndexFlatIP(dim)
        # vector rows ("slots"): faiss row r holds the vector shared by the ids in _members[r]
        self._slot_digest: list[bytes] = []
        self._slot_of_digest: dict[bytes, int] = {}
        self._members: list[dict[str, None]] = []  # insertion-ordered set of ids per row
        self._digest_of_id: dict[str, bytes] = {}
        # metadata, an inverted index of string/boolean values, and numeric columns by id row
        self._meta: dict[str, Metadata] = {}
        self._postings: dict[str, dict[_EqKey, set[str]]] = {}
        self._row_of_id: dict[str, int] = {}
        self._id_of_row: list[str] = []
        self._columns: dict[str, np.ndarray] = {}  # field -> float64 values by id row (NaN: not a number)
        self._list_valued: dict[str, set[str]] = {}  # field -> ids whose value there is a list with numbers
        self._lock = ReadWriteLock()

    @classmethod
    def for_embedder(cls, embedder: Embedder, *, search_threads: int | None = 1) -> VectorIndex:
        """An empty index sized for and tagged with ``embedder``."""
        return cls(embedder.dim, embedder_name=embedder.name, search_threads=search_threads)

    # -- introspection ----------------------------------------------------------------------------------
    @property
    def dim(self) -> int:
        return self._dim

    def __len__(self) -> int:
        return len(self._meta)

    def __contains__(self, id: object) -> bool:
        return id in self._meta

    @property
    def num_vectors(self) -> int:
        """Number of distinct stored vectors (ids with identical vectors share one)."""
        return int(self._flat.ntotal)

    def ids(self) -> list[str]:
        with self._lock.read():
            return list(self._meta)

    def get(self, id: str) -> Entry | None:
        """The stored vector and metadata of ``id``, or None if absent."""
        with self._lock.read():
            digest = self._digest_of_id.get(id)
            if digest is None:
                return None
            vector = self._flat.reconstruct(self._slot_of_digest[digest])
            return Entry(id, vector, _copy_meta(self._meta[id]))

    def metadata(self, id: str) -> Metadata | None:
        with self._lock.read():
            meta = self._meta.get(id)
            return None if meta is None else _copy_meta(meta)

    def count(self, filter: FilterSpec | None = None) -> int:
        """Number of ids, or of ids whose metadata matches ``filter``."""
        compiled = None if filter is None else compile_filter(filter)
        with self._lock.read():
            return len(self._meta) if compiled is None else len(self._matching_ids(compiled))

    def __repr__(self) -> str:
        return (
            f"VectorIndex({len(self)} ids, {self.num_vectors} vectors, dim={self._dim}, "
            f"embedder={self.embedder_name!r})"
        )

    # -- writes -----------------------------------------------------------------------------------------
    def add(
        self,
        ids: Sequence[str],
        vectors: np.ndarray | Sequence[Sequence[float]],
        metadata: Sequence[Mapping[str, Any]] | None = None,
    ) -> None:
        """Add new ids; raise ``VectorIndexError`` if any id is already present."""
        self._write(ids, vectors, metadata, replace=False)

    def upsert(
        self,
        ids: Sequence[str],
        vectors: np.ndarray | Sequence[Sequence[float]],
        metadata: Sequence[Mapping[str, Any]] | None = None,
    ) -> None:
        """Add or replace ids. With ``metadata=None`` existing ids keep their metadata (new ones get {})."""
        self._write(ids, vectors, metadata, replace=True)

    def update_metadata(self, id: str, metadata: Mapping[str, Any]) -> None:
        """Replace the metadata of ``id`` without touching its vector."""
        meta = check_metadata(metadata, f"id {id!r}")
        with self._lock.write():
            if id not in self._meta:
                raise VectorIndexError(f"no id {id!r} in the index")
            self._set_meta(id, meta)

    def delete(self, ids: Sequence[str] | str) -> int:
        """Remove ``ids`` (unknown ids are ignored); return how many were removed."""
        if isinstance(ids, str):
            ids = [ids]
        with self._lock.write():
            emptied: set[int] = set()
            removed = 0
            for id in ids:
                digest = self._digest_of_id.pop(id, None)
                if digest is None:
                    continue
                slot = self._slot_of_digest[digest]
                del self._members[slot][id]
                if not self._members[slot]:
                    emptied.add(slot)
                self._drop_meta(id)
                removed += 1
            self._free_slots(emptied)
            return removed

    def clear(self) -> None:
        with self._lock.write():
            self._flat.reset()
            for container in (
                self._slot_digest,
                self._slot_of_digest,
                self._members,
                self._digest_of_id,
                self._meta,
                self._postings,
                self._row_of_id,
                self._id_of_row,
                self._columns,
                self._list_valued,
            ):
                container.clear()

    def _write(
        self,
        ids: Sequence[str],
        vectors: np.ndarray | Sequence[Sequence[float]],
        metadata: Sequence[Mapping[str, Any]] | None,
        *,
        replace: bool,
    ) -> None:
        if isinstance(ids, str):
            raise VectorIndexError(
                "ids must be a sequence of strings, got a single string", hint="wrap it: [id]"
            )
        id_list = list(ids)
        rows = self._as_rows(vectors, len(id_list), "vectors")
        for id in id_list:
            if not isinstance(id, str) or not id:
                raise VectorIndexError(f"ids must be non-empty strings, got {id!r}")
        if len(set(id_list)) != len(id_list):
            raise VectorIndexError("ids contain duplicates within one call")
        metas: list[Metadata | None]
        if metadata is None:
            metas = [None] * len(id_list)
        else:
            if len(metadata) != len(id_list):
                raise VectorIndexError(f"{len(id_list)} ids but {len(metadata)} metadata dicts")
            metas = [check_metadata(m, f"id {id!r}") for id, m in zip(id_list, metadata, strict=True)]
        digests = [_digest(row) for row in rows]
        with self._lock.write():
            if not replace:
                present = [id for id in id_list if id in self._meta]
                if present:
                    raise VectorIndexError(
                        f"ids already in the index: {present[:5]}{' ...' if len(present) > 5 else ''}",
                        hint="use upsert() to replace them",
                    )
            emptied: set[int] = set()
            new_rows: list[np.ndarray] = []
            for id, row, digest, meta in zip(id_list, rows, digests, metas, strict=True):
                old = self._digest_of_id.get(id)
                if old != digest:
                    if old is not None:
                        old_slot = self._slot_of_digest[old]
                        del self._members[old_slot][id]
                        if not self._members[old_slot]:
                            emptied.add(old_slot)
                    slot = self._slot_of_digest.get(digest)
                    if slot is None:
                        slot = len(self._members)
                        self._slot_of_digest[digest] = slot
                        self._slot_digest.append(digest)
                        self._members.append({})
                        new_rows.append(row)
                    self._members[slot][id] = None
                    emptied.discard(slot)
                    self._digest_of_id[id] = digest
                if meta is not None or old is None:
                    self._set_meta(id, meta if meta is not None else {})
            if new_rows:
                self._flat.add(np.ascontiguousarray(np.stack(new_rows)))
            self._free_slots(emptied)

    def _as_rows(self, vectors: Any, n: int | None, what: str) -> np.ndarray:
        array = np.asarray(vectors, dtype=np.float32)
        if array.ndim == 1:
            array = array[None, :]
        if array.ndim != 2 or array.shape[1] != self._dim:
            raise VectorIndexError(f"{what} must have shape (n, {self._dim}), got {array.shape}")
        if n is not None and array.shape[0] != n:
            raise VectorIndexError(f"{n} ids but {array.shape[0]} {what}")
        if not np.isfinite(array).all():
            raise VectorIndexError(f"{what} contain NaN or infinite values")
        norms = np.linalg.norm(array, axis=1, keepdims=True)
        if array.shape[0] and float(norms.min()) == 0.0:
            raise VectorIndexError(f"{what} contain an all-zero row, which has no direction")
        return np.ascontiguousarray(array / norms, dtype=np.float32)

    # -- metadata bookkeeping (callers hold the write lock) ----------------------------------------------
    def _set_meta(self, id: str, meta: Metadata) -> None:
        row = self._row_of_id.get(id)
        if row is None:
            row = len(self._id_of_row)
            self._row_of_id[id] = row
            self._id_of_row.append(id)
            self._ensure_capacity(row + 1)
        else:
            self._unindex(id, row, self._meta[id])
        self._meta[id] = meta
        postings = self._postings
        for field, value in meta.items():
            if isinstance(value, str):
                postings.setdefault(field, {}).setdefault(("s", value), set()).add(id)
            elif isinstance(value, bool):
                postings.setdefault(field, {}).setdefault(("b", value), set()).add(id)
            elif isinstance(value, (int, float)):
                column = self._columns.get(field)
                if column is None:
                    column = self._columns[field] = np.full(self._capacity(), np.nan)
                column[row] = value
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, str):
                        postings.setdefault(field, {}).setdefault(("s", item), set()).add(id)
                    elif isinstance(item, bool):
                        postings.setdefault(field, {}).setdefault(("b", item), set()).add(id)
                    else:
                        self._list_valued.setdefault(field, set()).add(id)

    def _drop_meta(self, id: str) -> None:
        row = self._row_of_id.pop(id)
        self._unindex(id, row, self._meta.pop(id))
        last = len(self._id_of_row) - 1
        if row != last:  # move the last row into the hole
            moved = self._id_of_row[last]
            self._id_of_row[row] = moved
            self._row_of_id[moved] = row
            for column in self._columns.values():
                column[row] = column[last]
                column[last] = np.nan
        self._id_of_row.pop()

    def _unindex(self, id: str, row: int, meta: Metadata) -> None:
        for field, value in meta.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                self._columns[field][row] = np.nan
                continue
            if isinstance(value, list):
                listed = self._list_valued.get(field)
                if listed is not None:
                    listed.discard(id)
            for key in _value_keys(value):
                if key[0] not in ("s", "b"):
                    continue
                by_key = self._postings.get(field)
                if by_key is None or key not in by_key:
                    continue
                bucket = by_key[key]
                bucket.discard(id)
                if not bucket:
                    del by_key[key]
                    if not by_key:
                        del self._postings[field]

    def _capacity(self) -> int:
        return len(next(iter(self._columns.values()))) if self._columns else max(1024, len(self._id_of_row))

    def _ensure_capacity(self, rows: int) -> None:
        if not self._columns:
            return
        capacity = self._capacity()
        if rows <= capacity:
            return
        grown = max(rows, capacity * 2)
        for field, column in self._columns.items():
            bigger = np.full(grown, np.nan)
            bigger[:capacity] = column
            self._columns[field] = bigger

    # -- vector rows -------------------------------------------------------------------------------------
    def _free_slots(self, emptied: set[int]) -> None:
        """Drop rows no id uses: swap each with the last row, or compact once when there are many."""
        if not emptied:
            return
        faiss = _faiss()
        if len(emptied) <= _SWAP_DELETE_MAX:
            for slot in sorted(emptied, reverse=True):
                last = len(self._members) - 1
                del self._slot_of_digest[self._slot_digest[slot]]
                if slot != last:
                    xb = self._rows_view()
                    xb[slot] = xb[last]
                    self._members[slot] = self._members[last]
                    self._slot_digest[slot] = self._slot_digest[last]
                    self._slot_of_digest[self._slot_digest[slot]] = slot
                self._members.pop()
                self._slot_digest.pop()
                self._flat.remove_ids(faiss.IDSelectorRange(last, last + 1))
            return
        drop = np.fromiter(sorted(emptied), dtype=np.int64, count=len(emptied))
        self._flat.remove_ids(faiss.IDSelectorBatch(drop))
        keep = [slot for slot in range(len(self._members)) if slot not in emptied]
        self._members = [self._members[s] for s in keep]
        self._slot_digest = [self._slot_digest[s] for s in keep]
        self._slot_of_digest = {digest: slot for slot, digest in enumerate(self._slot_digest)}

    def _rows_view(self) -> np.ndarray:
        """Writable numpy view of the flat index's float32 rows (valid until the next add/remove)."""
        faiss = _faiss()
        n = int(self._flat.ntotal)
        return faiss.rev_swig_ptr(self._flat.get_xb(), n * self._dim).reshape(n, self._dim)

    # -- search -----------------------------------------------------------------------------------------
    def search(
        self,
        query: np.ndarray | Sequence[float],
        k: int = 10,
        *,
        filter: FilterSpec | None = None,
        min_score: float | None = None,
    ) -> list[Hit]:
        """The ``k`` ids most similar to ``query`` (one vector), best first, among those matching ``filter``
        and scoring at least ``min_score``. Ids with identical vectors tie; their order is unspecified."""
        queries = self._as_rows(query, 1, "query")
        return self.search_batch(queries, k, filter=filter, min_score=min_score)[0]

    def search_batch(
        self,
        queries: np.ndarray | Sequence[Sequence[float]],
        k: int = 10,
        *,
        filter: FilterSpec | None = None,
        min_score: float | None = None,
    ) -> list[list[Hit]]:
        """:meth:`search` for each row of ``queries`` (n, dim); returns one hit list per query."""
        if not isinstance(k, int) or k < 0:
            raise VectorIndexError(f"k must be a non-negative integer, got {k!r}")
        rows = self._as_rows(queries, None, "queries")
        compiled = compile_filter(filter) if filter is not None else None
        with self._lock.read(), self._faiss_threads():
            if k == 0 or not self._meta:
                return [[] for _ in range(len(rows))]
            if compiled is None:
                scores, slots = self._flat.search(rows, min(k, int(self._flat.ntotal)))
                return [
                    self._expand(sc, sl, k, min_score, None, None, None)[0]
                    for sc, sl in zip(scores, slots, strict=True)
                ]
            return [self._search_filtered(row, k, compiled, min_score) for row in rows]

    @contextmanager
    def _faiss_threads(self) -> Iterator[None]:
        """Run faiss with ``search_threads`` OpenMP threads in this thread (the setting is per thread)."""
        if self.search_threads is None:
            yield
            return
        faiss = _faiss()
        previous = faiss.omp_get_max_threads()
        faiss.omp_set_num_threads(self.search_threads)
        try:
            yield
        finally:
            faiss.omp_set_num_threads(previous)

    def _search_filtered(
        self, row: np.ndarray, k: int, compiled: CompiledFilter, min_score: float | None
    ) -> list[Hit]:
        """Exact filtered search. Selective filters answered by the inverted index or numeric columns go
        straight to a restricted search; otherwise over-fetch and filter, and if too few pass (or the
        candidates cost too much to check) restrict the search to the full set of matching ids."""
        terms = self._term_candidates(compiled)
        if terms is not None and terms.estimate <= max(_EXACT_PATH_MIN, len(self._meta) // 20):
            return self._search_within(row, k, self._resolve(terms, compiled), min_score)
        total = int(self._flat.ntotal)
        fetch = min(total, max(_OVERFETCH_FACTOR * k, _OVERFETCH_MIN))
        scores, slots = self._flat.search(row[None, :], fetch)
        budget = max(_OVERFETCH_BUDGET_PER_HIT * k, _OVERFETCH_MIN)
        hits, complete = self._expand(scores[0], slots[0], k, min_score, compiled.matches, None, budget)
        if len(hits) >= k or (complete and fetch == total):
            return hits
        if complete and min_score is not None and float(scores[0][-1]) < min_score:
            return hits
        matching = self._resolve(terms, compiled) if terms is not None else self._scan(compiled)
        return self._search_within(row, k, matching, min_score)

    def _search_within(
        self, row: np.ndarray, k: int, matching: set[str], min_score: float | None
    ) -> list[Hit]:
        """Top ``k`` of exactly the ids in ``matching``: faiss search restricted to their rows."""
        if not matching:
            return []
        groups: dict[int, list[str]] = {}
        for id in matching:
            groups.setdefault(self._slot_of_digest[self._digest_of_id[id]], []).append(id)
        total = int(self._flat.ntotal)
        if len(groups) == total:
            scores, slots = self._flat.search(row[None, :], min(k, total))
        else:
            faiss = _faiss()
            mask = np.zeros(total, dtype=bool)
            mask[np.fromiter(groups, dtype=np.int64, count=len(groups))] = True
            bitmap = np.packbits(mask, bitorder="little")
            selector = faiss.IDSelectorBitmap(total, faiss.swig_ptr(bitmap))
            params = faiss.SearchParameters(sel=selector)
            scores, slots = self._flat.search(row[None, :], min(k, len(groups)), params=params)
        return self._expand(scores[0], slots[0], k, min_score, None, groups, None)[0]

    def _term_candidates(self, compiled: CompiledFilter) -> _Candidates | None:
        """What the inverted index and numeric columns say about ``compiled`` (None: nothing applies)."""
        if not compiled.postings_terms and not compiled.range_terms:
            return None
        buckets: list[list[set[str]]] = []
        for field, keys in compiled.postings_terms:
            by_key = self._postings.get(field, {})
            buckets.append([by_key[key] for key in keys if key in by_key])
        mask: np.ndarray | None = None
        listed: set[str] = set()
        n = len(self._id_of_row)
        for field, op, bound in compiled.range_terms:
            column = self._columns.get(field)
            term_mask = np.zeros(n, dtype=bool) if column is None else _COLUMN_OPS[op](column[:n], bound)
            mask = term_mask if mask is None else mask & term_mask
            listed |= self._list_valued.get(field, set())
        sizes = [sum(len(b) for b in term) for term in buckets]
        if mask is not None:
            sizes.append(int(np.count_nonzero(mask)) + len(listed))
        return _Candidates(buckets, mask, listed, min(sizes))

    def _resolve(self, terms: _Candidates, compiled: CompiledFilter) -> set[str]:
        """The exact set of ids matching ``compiled``, starting from the index terms' candidates."""
        ordered = sorted(terms.postings, key=lambda term: sum(len(b) for b in term))
        mask, matches, meta = terms.mask, compiled.matches, self._meta
        listed_ok = {id for id in terms.listed if matches(meta[id])} if terms.listed else set()
        mask_size = None if mask is None else int(np.count_nonzero(mask)) + len(listed_ok)
        if ordered and (mask_size is None or sum(len(b) for b in ordered[0]) <= mask_size):
            candidates = set().union(*ordered[0])
            rest = ordered[1:]
            if mask is not None:
                row_of = self._row_of_id
                candidates = {id for id in candidates if mask[row_of[id]] or id in listed_ok}
        else:
            assert mask is not None
            id_of_row = self._id_of_row
            candidates = {id_of_row[r] for r in np.flatnonzero(mask).tolist()} | listed_ok
            rest = ordered
        for term in rest:
            if not candidates:
                break
            candidates = {id for id in candidates if any(id in bucket for bucket in term)}
        if compiled.covered:
            return candidates
        return {id for id in candidates if matches(meta[id])}

    def _scan(self, compiled: CompiledFilter) -> set[str]:
        matches = compiled.matches
        return {id for id, meta in self._meta.items() if matches(meta)}

    def _matching_ids(self, compiled: CompiledFilter) -> set[str]:
        terms = self._term_candidates(compiled)
        return self._scan(compiled) if terms is None else self._resolve(terms, compiled)

    def _expand(
        self,
        scores: np.ndarray,
        slots: np.ndarray,
        k: int,
        min_score: float | None,
        matches: Predicate | None,
        groups: Mapping[int, list[str]] | None,
        budget: int | None,
    ) -> tuple[list[Hit], bool]:
        """Turn ranked rows into ranked hits: each row yields its ids (or ``groups[row]``) passing
        ``matches``, up to ``k``. Returns the hits and False if it stopped after checking ``budget`` ids
        before reaching ``k`` hits or the end of the rows."""
        hits: list[Hit] = []
        checked = 0
        for score, slot in zip(scores.tolist(), slots.tolist(), strict=True):
            if slot < 0 or (min_score is not None and score < min_score):
                return hits, True
            ids = self._members[slot] if groups is None else groups[slot]
            for id in ids:
                meta = self._meta[id]
                if matches is not None:
                    checked += 1
                    if budget is not None and checked > budget:
                        return hits, False
                    if not matches(meta):
                        continue
                hits.append(Hit(id, score, _copy_meta(meta)))
                if len(hits) == k:
                    return hits, True
        return hits, True

    # -- persistence ------------------------------------------------------------------------------------
    def save(self, directory: str | Path) -> Path:
        """Write the index to ``directory`` atomically (a crash leaves the previous save readable)."""
        faiss = _faiss()
        target = Path(directory)
        target.mkdir(parents=True, exist_ok=True)
        with self._lock.read():
            vectors_name = f"vectors.{secrets.token_hex(6)}.faiss"
            tmp_vectors = target / f".{vectors_name}.tmp"
            faiss.write_index(self._flat, str(tmp_vectors))
            _fsync_file(tmp_vectors)
            os.replace(tmp_vectors, target / vectors_name)
            document = {
                "format": FORMAT_NAME,
                "version": FORMAT_VERSION,
                "dim": self._dim,
                "embedder": self.embedder_name,
                "metric": "cosine",
                "vectors_file": vectors_name,
                "rows": [
                    [digest.hex(), list(members)]
                    for digest, members in zip(self._slot_digest, self._members, strict=True)
                ],
                "metadata": self._meta,
                "extra": self.extra,
            }
            _write_json_atomic(target / META_FILE, document)
        for stale in target.glob("vectors.*.faiss"):
            if stale.name != vectors_name:
                stale.unlink(missing_ok=True)
        return target

    @classmethod
    def load(
        cls, directory: str | Path, *, embedder: Embedder | None = None, search_threads: int | None = 1
    ) -> VectorIndex:
        """Read an index written by :meth:`save`; with ``embedder``, refuse one built by another model."""
        faiss = _faiss()
        source = Path(directory)
        meta_path = source / META_FILE
        if not meta_path.is_file():
            raise VectorIndexError(
                f"{source}: no vector index here ({META_FILE} is missing)",
                hint="build it first (EntityStore.sync / VectorIndex.save)",
            )
        try:
            document = json.loads(meta_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise VectorIndexError(f"{meta_path}: cannot read the index metadata: {exc}") from exc
        if not isinstance(document, dict) or document.get("format") != FORMAT_NAME:
            raise VectorIndexError(f"{meta_path}: not a scenerag vector index")
        if document.get("version") != FORMAT_VERSION:
            raise VectorIndexError(
                f"{meta_path}: index format version {document.get('version')!r} is not supported "
                f"(this scenerag reads version {FORMAT_VERSION})",
                hint="rebuild the index",
            )
        try:
            dim, name, rows = int(document["dim"]), document.get("embedder"), list(document["rows"])
            vectors_path = source / str(document["vectors_file"])
            metadata = dict(document["metadata"])
        except (KeyError, TypeError, ValueError) as exc:
            raise VectorIndexError(
                f"{meta_path}: malformed index metadata ({exc!r})", hint="rebuild the index"
            ) from exc
        if embedder is not None and (embedder.dim != dim or (name is not None and embedder.name != name)):
            raise IndexMismatchError(
                f"{source}: index was built with embedder {name!r} (dim {dim}), "
                f"but the current embedder is {embedder.name!r} (dim {embedder.dim})",
                hint="use the same embedder, or rebuild the index with the new one",
            )
        try:
            flat = faiss.read_index(str(vectors_path))
        except RuntimeError as exc:
            raise VectorIndexError(f"{vectors_path}: cannot read the faiss index: {exc}") from exc
        if flat.d != dim or flat.ntotal != len(rows) or flat.metric_type != faiss.METRIC_INNER_PRODUCT:
            raise VectorIndexError(
                f"{vectors_path}: faiss index ({flat.ntotal} x {flat.d}) does not match {META_FILE} "
                f"({len(rows)} x {dim})",
                hint="the directory was modified by hand; rebuild the index",
            )
        index = cls(dim, embedder_name=name, search_threads=search_threads)
        index._flat = flat
        for slot, (digest_hex, members) in enumerate(rows):
            digest = bytes.fromhex(digest_hex)
            index._slot_digest.append(digest)
            index._slot_of_digest[digest] = slot
            index._members.append(dict.fromkeys(members))
            for id in members:
                index._digest_of_id[id] = digest
        for id, meta in metadata.items():
            if id not in index._digest_of_id:
                raise VectorIndexError(f"{meta_path}: id {id!r} has metadata but no vector")
            index._set_meta(id, meta)
        if len(index._meta) != len(index._digest_of_id):
            raise VectorIndexError(f"{meta_path}: some ids have a vector but no metadata entry")
        index.extra = dict(document.get("extra") or {})
        return index


def _copy_meta(meta: Metadata) -> Metadata:
    return {k: (list(v) if isinstance(v, list) else v) for k, v in meta.items()}


def _fsync_file(path: Path) -> None:
    with open(path, "rb") as handle:
        os.fsync(handle.fileno())


def _write_json_atomic(path: Path, document: Any) -> None:
    """Write JSON to a temporary file, fsync it, then rename it over ``path`` (atomic on POSIX)."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(document, handle, separators=(",", ":"), allow_nan=False)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    try:
        dir_fd = os.open(path.parent, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
