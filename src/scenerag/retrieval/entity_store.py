"""Entity-level semantic search over a scene graph that changes while a robot acts.

Contract: an ``EntityStore`` keeps every indexed node's documents (see ``documents``) in a
``VectorIndex``. ``sync(graph)`` diffs the graph against what is indexed by content hash and embeds only
documents whose text is new or changed (metadata-only changes are written without embedding; removed
nodes are deleted). ``search`` returns nodes, not documents: a sub-document hit (a caption) resolves to its
node, and each node appears once with its best-scoring document. ``save``/``load`` persist the index and
the sync state together atomically, by default in ``<graph db dir>/vectors/``.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from scenerag.graph.model import Node, SceneGraph
from scenerag.retrieval.documents import (
    AncestorResolver,
    DocumentConfig,
    EntityDocument,
    NodeDocuments,
    graph_documents,
    node_documents,
    split_document_id,
)
from scenerag.retrieval.embeddings import DEFAULT_BATCH_SIZE, Embedder, ProgressFn
from scenerag.retrieval.vector_index import (
    META_FILE,
    FilterSpec,
    IndexMismatchError,
    Metadata,
    ReadWriteLock,
    VectorIndex,
    VectorIndexError,
)

VECTORS_DIRNAME = "vectors"
_STATE_KEY = "entity_store"
_STATE_VERSION = 1

UpsertOutcome = Literal["added", "embedded", "metadata", "unchanged"]
"""``embedded``: some text re-embedded; ``metadata``: changed without embedding (metadata or dropped texts)."""


@dataclass(frozen=True, slots=True)
class EntityHit:
    """A retrieved node: its best document's score and text, and whether that was a sub-document."""

    symbol: str
    score: float
    matched_text: str
    via_subdocument: bool
    field: str | None
    metadata: Metadata


@dataclass(frozen=True, slots=True)
class SyncReport:
    """What ``sync`` did: node counts per outcome and the number of texts sent to the embedder."""

    added: int
    reembedded: int
    metadata_only: int
    removed: int
    unchanged: int
    texts_embedded: int
    seconds: float

    @property
    def changed(self) -> int:
        return self.added + self.reembedded + self.metadata_only + self.removed

    @property
    def nodes(self) -> int:
        """Nodes indexed after the sync."""
        return self.added + self.reembedded + self.metadata_only + self.unchanged

    def summary(self) -> str:
        """One line for a user: ``"166 nodes indexed: 166 added (312 texts embedded) in 2.1 s"``."""
        if not self.changed:
            return f"up to date: {self.nodes} nodes indexed, nothing changed ({self.seconds:.2f} s)"
        parts = [
            f"{n} {what}"
            for n, what in (
                (self.added, "added"),
                (self.reembedded, "re-embedded"),
                (self.metadata_only, "metadata updated"),
                (self.removed, "removed"),
                (self.unchanged, "unchanged"),
            )
            if n
        ]
        return (
            f"{self.nodes} nodes indexed: {', '.join(parts)} ({self.texts_embedded} texts embedded) "
            f"in {self.seconds:.1f} s"
        )


@dataclass(slots=True)
class _IndexedNode:
    text_hash: str
    meta_hash: str
    texts: dict[str, tuple[str | None, str]]  # doc id -> (field, text)
    ancestors: dict[str, str]


def vectors_dir(db_dir: str | Path) -> Path:
    """Where an entity store lives next to a graph database directory: ``<db_dir>/vectors``."""
    return Path(db_dir) / VECTORS_DIRNAME


def vectors_home(db: str | Path) -> Path:
    """The folder whose ``vectors/`` holds the entity index of ``db``: the database directory itself, or
    for a server URI (``bolt://...``) a per-server folder in ``$SCENERAG_CACHE`` (``~/.cache/scenerag``)."""
    text = str(db)
    if "://" in text:
        digest = hashlib.sha256(text.split("@")[-1].encode()).hexdigest()[:16]
        return (
            Path(os.environ.get("SCENERAG_CACHE", Path.home() / ".cache" / "scenerag")) / "vectors" / digest
        )
    return Path(db)


#: folders of a database directory that are not the graph (the index itself, the undo journal)
_NOT_THE_GRAPH = frozenset({VECTORS_DIRNAME, "undo"})
#: small bookkeeping files ArcadeDB rewrites on every close, reads included: their content counts, not their
#: modification time (the last transaction id changes only with a write)
_BY_CONTENT = frozenset({"last-tx-id.bin", "statistics.json"})
SOURCE_FILE = "source.json"


def database_fingerprint(db_dir: str | Path) -> str | None:
    """A digest of every file of an embedded database directory (path, size, modification time; the
    content of the bookkeeping files the engine rewrites on every close), the index's own folder and the
    undo journal left out: equal digests mean nothing was written since. None when ``db_dir`` is not a
    directory (e.g. a Bolt URI)."""
    root = Path(db_dir)
    if not root.is_dir():
        return None
    digest = hashlib.sha256()
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            if folder == root and entry.name in _NOT_THE_GRAPH:
                continue
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(Path(entry.path))
                    continue
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            rel = os.path.relpath(entry.path, root)
            if entry.name in _BY_CONTENT and info.st_size < 1 << 20:
                try:
                    stamp = hashlib.sha256(Path(entry.path).read_bytes()).hexdigest()
                except OSError:
                    continue
            else:
                stamp = str(info.st_mtime_ns)
            digest.update(f"{rel}\0{info.st_size}\0{stamp}\n".encode())
    return digest.hexdigest()


def read_source_record(directory: str | Path) -> dict[str, object]:
    """What :func:`write_source_record` wrote in an index folder (``{}`` when absent or unreadable)."""
    try:
        data = json.loads((Path(directory) / SOURCE_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def write_source_record(directory: str | Path, **record: object) -> None:
    """Record, next to a saved index, which database state and embedder it reflects (for a fast
    "nothing changed" check that loads neither the database nor the embedder)."""
    path = Path(directory) / SOURCE_FILE
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, sort_keys=True))
    os.replace(tmp, path)


class EntityStore:
    """Semantic entity search over scene-graph nodes with incremental updates (see module docstring)."""

    def __init__(
        self,
        embedder: Embedder,
        index: VectorIndex | None = None,
        *,
        config: DocumentConfig | None = None,
        path: str | Path | None = None,
    ) -> None:
        if index is None:
            index = VectorIndex.for_embedder(embedder)
        elif index.dim != embedder.dim or index.embedder_name not in (None, embedder.name):
            raise IndexMismatchError(
                f"index of embedder {index.embedder_name!r} (dim {index.dim}) cannot serve embedder "
                f"{embedder.name!r} (dim {embedder.dim})",
                hint="use the embedder the index was built with, or a new index",
            )
        self.embedder = embedder
        self.index = index
        self.config = config or DocumentConfig()
        self.path = None if path is None else Path(path)
        self._nodes: dict[str, _IndexedNode] = {}
        self._docs_per_node = 1  # upper bound on documents per node, so k nodes need <= k * this hits
        self._lock = ReadWriteLock()  # readers vs the short apply phase of a write
        self._writer = threading.Lock()  # serialises whole writes (plan, embed, apply)

    # -- introspection ----------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._nodes)

    def __contains__(self, symbol: object) -> bool:
        return symbol in self._nodes

    def symbols(self) -> list[str]:
        with self._lock.read():
            return list(self._nodes)

    def documents_of(self, symbol: str) -> dict[str, str]:
        """Indexed texts of ``symbol`` by document id (``{}`` if the node is not indexed)."""
        with self._lock.read():
            state = self._nodes.get(symbol)
            return {} if state is None else {doc_id: text for doc_id, (_, text) in state.texts.items()}

    def __repr__(self) -> str:
        return f"EntityStore({len(self)} nodes, {self.index!r})"

    # -- updates ----------------------------------------------------------------------------------------
    def sync(
        self, graph: SceneGraph, *, batch_size: int = DEFAULT_BATCH_SIZE, progress: ProgressFn | None = None
    ) -> SyncReport:
        """Make the index reflect ``graph``: embed new/changed texts only, update metadata, drop removed nodes."""
        started = time.perf_counter()
        current = {nd.symbol: nd for nd in graph_documents(graph, self.config)}
        if progress is not None:
            progress("documents", len(current), len(current))
        with self._writer:
            removed = [symbol for symbol in self._nodes if symbol not in current]
            plans = {symbol: self._plan(nd) for symbol, nd in current.items()}
            to_embed = [(doc.doc_id, doc.text) for docs in plans.values() for doc in docs]
            vectors = self._embed([text for _, text in to_embed], batch_size, progress)
            with self._lock.write():
                self.index.delete([doc_id for symbol in removed for doc_id in self._nodes[symbol].texts])
                for symbol in removed:
                    del self._nodes[symbol]
                outcomes = self._apply(current, plans, to_embed, vectors)
        if progress is not None:
            progress("index", len(current), len(current))
        return SyncReport(
            added=outcomes.count("added"),
            reembedded=outcomes.count("embedded"),
            metadata_only=outcomes.count("metadata"),
            removed=len(removed),
            unchanged=outcomes.count("unchanged"),
            texts_embedded=len(to_embed),
            seconds=time.perf_counter() - started,
        )

    def upsert_node(
        self, node: Node, graph: SceneGraph | None = None, *, ancestors: Mapping[str, str] | None = None
    ) -> UpsertOutcome:
        """Index or re-index one node; returns what was done.

        Its ``room``/``floor``/``building`` metadata come from ``ancestors`` if given, else from ``graph``
        (CONTAINS/HAS_ELEMENT parents), else a known node keeps the ancestors it had.
        """
        by_symbol = None if ancestors is None else {node.symbol: ancestors}
        return self.upsert_nodes([node], graph, ancestors=by_symbol)[0]

    def upsert_nodes(
        self,
        nodes: Sequence[Node],
        graph: SceneGraph | None = None,
        *,
        ancestors: Mapping[str, Mapping[str, str]] | None = None,
    ) -> list[UpsertOutcome]:
        """:meth:`upsert_node` for several nodes, embedding all their new texts in one batch (a robot's
        per-frame updates: a batch of short labels costs a fraction of one-by-one embedding).
        ``ancestors`` maps symbols to their ``room``/``floor``/``building``."""
        symbols = [node.symbol for node in nodes]
        if len(set(symbols)) != len(symbols):
            raise VectorIndexError("upsert_nodes got the same symbol twice")
        resolve = AncestorResolver(graph) if graph is not None and self.config.include_ancestors else None
        given = dict(ancestors or {})
        with self._writer:
            current: dict[str, NodeDocuments] = {}
            for node in nodes:
                if node.symbol in given:
                    anc = dict(given[node.symbol])
                elif resolve is not None:
                    anc = resolve(node.symbol)
                else:
                    state = self._nodes.get(node.symbol)
                    anc = dict(state.ancestors) if state is not None else {}
                current[node.symbol] = node_documents(node, self.config, ancestors=anc)
            plans = {symbol: self._plan(nd) for symbol, nd in current.items()}
            to_embed = [(doc.doc_id, doc.text) for docs in plans.values() for doc in docs]
            vectors = self._embed([text for _, text in to_embed], DEFAULT_BATCH_SIZE, None)
            with self._lock.write():
                return self._apply(current, plans, to_embed, vectors)

    def remove_node(self, symbol: str) -> bool:
        """Drop ``symbol`` and its sub-documents; False if it was not indexed."""
        with self._writer, self._lock.write():
            state = self._nodes.pop(symbol, None)
            if state is None:
                return False
            self.index.delete(list(state.texts))
            return True

    def _plan(self, nd: NodeDocuments) -> list[EntityDocument]:
        """Documents of ``nd`` whose text must be (re-)embedded (caller holds the writer mutex)."""
        state = self._nodes.get(nd.symbol)
        if state is None:
            return list(nd.documents)
        if state.text_hash == nd.text_hash:
            return []
        return [doc for doc in nd.documents if state.texts.get(doc.doc_id, (None, None))[1] != doc.text]

    def _embed(self, texts: list[str], batch_size: int, progress: ProgressFn | None) -> np.ndarray:
        if not texts:
            return np.empty((0, self.index.dim), dtype=np.float32)
        return self.embedder.embed(texts, batch_size=batch_size, progress=progress)

    def _apply(
        self,
        current: Mapping[str, NodeDocuments],
        plans: Mapping[str, list[EntityDocument]],
        embedded: Sequence[tuple[str, str]],
        vectors: np.ndarray,
    ) -> list[UpsertOutcome]:
        """Write planned changes to the index (caller holds the write lock); one outcome per node."""
        vector_of = {doc_id: row for (doc_id, _), row in zip(embedded, vectors, strict=True)}
        upsert_ids: list[str] = []
        upsert_rows: list[np.ndarray] = []
        upsert_meta: list[Metadata] = []
        stale: list[str] = []
        outcomes: list[UpsertOutcome] = []
        for symbol, nd in current.items():
            state = self._nodes.get(symbol)
            if state is not None and state.text_hash == nd.text_hash and state.meta_hash == nd.meta_hash:
                outcomes.append("unchanged")
                continue
            planned = {doc.doc_id for doc in plans[symbol]}
            metadata_changed = state is None or state.meta_hash != nd.meta_hash
            for doc in nd.documents:
                if doc.doc_id in planned:
                    upsert_ids.append(doc.doc_id)
                    upsert_rows.append(vector_of[doc.doc_id])
                    upsert_meta.append(doc.metadata)
                elif metadata_changed:
                    self.index.update_metadata(doc.doc_id, doc.metadata)
            if state is not None and state.text_hash != nd.text_hash:  # some document may have gone
                current_ids = {d.doc_id for d in nd.documents}
                stale.extend(doc_id for doc_id in state.texts if doc_id not in current_ids)
            self._nodes[symbol] = _IndexedNode(
                nd.text_hash,
                nd.meta_hash,
                {d.doc_id: (d.field, d.text) for d in nd.documents},
                dict(nd.ancestors),
            )
            self._docs_per_node = max(self._docs_per_node, len(nd.documents))
            # "metadata": changed without embedding (metadata, or a sub-document removed)
            outcomes.append("added" if state is None else "embedded" if planned else "metadata")
        if stale:
            self.index.delete(stale)
        if upsert_ids:
            self.index.upsert(upsert_ids, np.stack(upsert_rows), upsert_meta)
        return outcomes

    # -- search -----------------------------------------------------------------------------------------
    def search(
        self,
        text: str,
        k: int = 10,
        *,
        filter: FilterSpec | None = None,
        labels: Sequence[str] | None = None,
        min_score: float | None = None,
    ) -> list[EntityHit]:
        """The ``k`` nodes whose label or long texts best match ``text``, best first, each node once.

        ``filter`` uses the grammar of :func:`~scenerag.retrieval.vector_index.compile_filter` over node
        metadata; ``labels`` keeps only nodes with these layer labels (e.g. ``["Object"]``).
        """
        if not isinstance(text, str) or not text.strip():
            raise VectorIndexError("search text must be a non-empty string")
        vector = self.embedder.embed([text])[0]
        return self.search_vector(vector, k, filter=filter, labels=labels, min_score=min_score)

    def search_vector(
        self,
        vector: np.ndarray,
        k: int = 10,
        *,
        filter: FilterSpec | None = None,
        labels: Sequence[str] | None = None,
        min_score: float | None = None,
    ) -> list[EntityHit]:
        """:meth:`search` with a precomputed query vector."""
        spec = _with_labels(filter, labels)
        with self._lock.read():
            doc_hits = self.index.search(vector, k * self._docs_per_node, filter=spec, min_score=min_score)
            hits: list[EntityHit] = []
            seen: set[str] = set()
            for hit in doc_hits:
                symbol, field = split_document_id(hit.id)
                if symbol in seen:
                    continue
                seen.add(symbol)
                state = self._nodes[symbol]
                hits.append(
                    EntityHit(
                        symbol, hit.score, state.texts[hit.id][1], field is not None, field, hit.metadata
                    )
                )
                if len(hits) == k:
                    break
            return hits

    # -- persistence ------------------------------------------------------------------------------------
    def save(self, directory: str | Path | None = None) -> Path:
        """Write index and sync state to ``directory`` (default: the path this store was opened with)."""
        target = Path(directory) if directory is not None else self.path
        if target is None:
            raise VectorIndexError(
                "EntityStore.save() needs a directory", hint="pass one or use EntityStore.open"
            )
        with self._writer:  # no write can change the state while it is written
            self.index.extra[_STATE_KEY] = {
                "version": _STATE_VERSION,
                "nodes": {
                    symbol: [
                        s.text_hash,
                        s.meta_hash,
                        [[d, f, t] for d, (f, t) in s.texts.items()],
                        s.ancestors,
                    ]
                    for symbol, s in self._nodes.items()
                },
            }
            try:
                return self.index.save(target)
            finally:
                self.index.extra.pop(_STATE_KEY, None)

    @classmethod
    def load(
        cls, directory: str | Path, embedder: Embedder, *, config: DocumentConfig | None = None
    ) -> EntityStore:
        """Read a store written by :meth:`save`; raises ``IndexMismatchError`` for another embedder."""
        index = VectorIndex.load(directory, embedder=embedder)
        state = index.extra.pop(_STATE_KEY, None)
        if not isinstance(state, dict) or state.get("version") != _STATE_VERSION:
            raise VectorIndexError(
                f"{directory}: vector index holds no entity-store state (or an unsupported version)",
                hint="rebuild it with EntityStore.sync and save",
            )
        store = cls(embedder, index, config=config, path=directory)
        for symbol, (text_hash, meta_hash, texts, ancestors) in state["nodes"].items():
            store._nodes[symbol] = _IndexedNode(
                text_hash, meta_hash, {d: (f, t) for d, f, t in texts}, dict(ancestors)
            )
            store._docs_per_node = max(store._docs_per_node, len(texts))
        return store

    @classmethod
    def open(
        cls, db_dir: str | Path, embedder: Embedder, *, config: DocumentConfig | None = None
    ) -> EntityStore:
        """The store saved in ``<db_dir>/vectors/``, or an empty one that will save there."""
        path = vectors_dir(db_dir)
        if (path / META_FILE).exists():
            return cls.load(path, embedder, config=config)
        return cls(embedder, config=config, path=path)


def _with_labels(filter: FilterSpec | None, labels: Sequence[str] | None) -> FilterSpec | None:
    if labels is None:
        return filter
    if isinstance(labels, str):
        labels = [labels]
    label_filter = {"label": {"$in": list(labels)}}
    return label_filter if filter is None else {"$and": [dict(filter), label_filter]}
