"""EmbodiedRAG indexing, retrieval and environment feedback (paper §4.2, §4.3, §4.5): entities as documents,
an entity index kept in sync with the robot's changing scene graph, and the per-step task subgraph.

Contract: ``SceneIndex.apply(graph, diff)`` makes its ``EntityStore`` reflect ``graph`` by touching only the
nodes a ``GraphChanges`` (e.g. the household simulator's ``SceneGraphDiff``) names (new nodes embedded,
changed ones re-indexed — a state change is metadata only, since an entity's text is its class label —,
removed ones deleted). ``TaskRetriever.retrieve(graph)`` runs the pre-retrieved queries plus the self-query
queries of the last ``feedback_window`` steps and the queries for the objects the environment's last
answer named (``set_mentions``: each an id filter) against the current index and returns the induced
subgraph with only the task-relevant attributes.
"""

from __future__ import annotations

import json
import time
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from scenerag.agents.embodied.environment import GraphChanges
from scenerag.agents.embodied.errors import EmbodiedConfigError
from scenerag.graph import ontology as ont
from scenerag.graph.model import SceneGraph
from scenerag.retrieval.documents import DocumentConfig
from scenerag.retrieval.embeddings import Embedder
from scenerag.retrieval.entity_store import EntityStore
from scenerag.retrieval.subgraph import EntityQuery, RetrievedSubgraph, SubgraphConfig, retrieve_subgraph

ENTITY_LABELS: tuple[str, ...] = (ont.OBJECT,)
NO_SUBDOCUMENTS = 1 << 30  # a minimum length no text reaches: every attribute stays metadata
ID_ATTRIBUTE = "objectId"


def entity_document_config() -> DocumentConfig:
    """Objects as documents: the text is the class label, every attribute (and the description) metadata."""
    return DocumentConfig(labels=ENTITY_LABELS, subdocument_min_chars=NO_SUBDOCUMENTS)


def default_subgraph_config() -> SubgraphConfig:
    """Top-8 per entity above cosine 0.55 and within 0.2 of the best hit; receptacles holding a hit join the
    subgraph with their ``isOpen``; every node keeps its ``objectId`` (the id the planner acts on)."""
    return SubgraphConfig(
        k=8,
        min_score=0.55,
        relative_margin=0.2,
        labels=ENTITY_LABELS,
        connect_containment=True,
        connector_labels=(ont.OBJECT,),
        connector_attributes=("isOpen",),
        keep_attributes=(ID_ATTRIBUTE,),
    )


@dataclass(frozen=True, slots=True)
class IndexUpdate:
    """What one ``SceneIndex.apply`` did: node counts per outcome, texts sent to the embedder, time."""

    added: int
    reembedded: int
    metadata_only: int
    unchanged: int
    removed: int
    texts_embedded: int | None
    seconds: float

    @property
    def touched(self) -> int:
        return self.added + self.reembedded + self.metadata_only + self.unchanged + self.removed

    def to_dict(self) -> dict[str, float | int | None]:
        return {
            "added": self.added,
            "reembedded": self.reembedded,
            "metadata_only": self.metadata_only,
            "unchanged": self.unchanged,
            "removed": self.removed,
            "texts_embedded": self.texts_embedded,
            "seconds": round(self.seconds, 4),
        }


def _texts_encoded(embedder: Embedder) -> int | None:
    stats = getattr(embedder, "stats", None)
    return None if stats is None else int(stats().texts_encoded)


class SceneIndex:
    """An ``EntityStore`` of the scene's entities, updated incrementally from scene-graph diffs."""

    def __init__(self, embedder: Embedder, *, config: DocumentConfig | None = None) -> None:
        self.embedder = embedder
        self.config = config or entity_document_config()
        self.store = EntityStore(embedder, config=self.config)
        self.labels = None if self.config.labels is None else frozenset(self.config.labels)
        self.updates: list[IndexUpdate] = []

    def __len__(self) -> int:
        return len(self.store)

    def apply(self, graph: SceneGraph, diff: GraphChanges) -> IndexUpdate:
        """Index the nodes ``diff`` touches (as they are in ``graph``) and drop the ones it removed."""
        started = time.perf_counter()
        encoded_before = _texts_encoded(self.embedder)
        removed = sum(self.store.remove_node(symbol) for symbol in diff.removed_nodes)
        nodes = [
            graph.node(symbol)
            for symbol in sorted(diff.touched_nodes())
            if symbol in graph and (self.labels is None or graph.node(symbol).label in self.labels)
        ]
        outcomes = self.store.upsert_nodes(nodes, graph) if nodes else []
        encoded_after = _texts_encoded(self.embedder)
        update = IndexUpdate(
            added=outcomes.count("added"),
            reembedded=outcomes.count("embedded"),
            metadata_only=outcomes.count("metadata"),
            unchanged=outcomes.count("unchanged"),
            removed=removed,
            texts_embedded=None
            if encoded_before is None or encoded_after is None
            else encoded_after - encoded_before,
            seconds=time.perf_counter() - started,
        )
        self.updates.append(update)
        return update


def _query_key(query: EntityQuery) -> tuple[str, str]:
    return query.text.strip().lower(), json.dumps(dict(query.filter or {}), sort_keys=True, default=str)


def merge_queries(queries: Iterable[EntityQuery]) -> list[EntityQuery]:
    """Queries with the same text and filter merged into one holding the union of their attributes."""
    merged: dict[tuple[str, str], EntityQuery] = {}
    for query in queries:
        key = _query_key(query)
        known = merged.get(key)
        if known is None:
            merged[key] = query
        else:
            attributes = tuple(dict.fromkeys((*known.attributes, *query.attributes)))
            merged[key] = EntityQuery(known.text, attributes, known.filter, known.source)
    return list(merged.values())


class TaskRetriever:
    """The per-step subgraph of one task: pre-retrieved queries plus recent self-query feedback."""

    def __init__(
        self,
        index: SceneIndex,
        queries: Sequence[EntityQuery],
        config: SubgraphConfig | None = None,
        *,
        feedback_window: int = 1,
    ) -> None:
        if feedback_window < 1:
            raise EmbodiedConfigError(f"feedback_window must be >= 1 step, got {feedback_window}")
        self.index = index
        self.base_queries = list(queries)
        self.config = config or default_subgraph_config()
        self.feedback: deque[list[EntityQuery]] = deque(maxlen=feedback_window)
        self.mentions: list[EntityQuery] = []

    def add_feedback(self, queries: Sequence[EntityQuery]) -> None:
        """Queries from the latest thought; they replace those older than ``feedback_window`` steps."""
        self.feedback.append(list(queries))

    def set_mentions(self, queries: Sequence[EntityQuery]) -> None:
        """Queries for the objects the environment's last answer named (environment feedback); they
        replace the previous ones."""
        self.mentions = list(queries)

    def queries(self) -> list[EntityQuery]:
        return merge_queries(
            [*self.base_queries, *(q for step in self.feedback for q in step), *self.mentions]
        )

    def retrieve(self, graph: SceneGraph, *, always_include: Iterable[str] = ()) -> RetrievedSubgraph:
        return retrieve_subgraph(
            self.index.store, graph, self.queries(), self.config, always_include=always_include
        )
