"""The flat retrieval baseline of the KeySG benchmarks: one embedding of the whole query against every
object's documents of a :class:`~scenerag.retrieval.hierarchical.HierarchicalIndex`, with none of the
hierarchy (no floors, rooms, anchors or keyframes).
"""

from __future__ import annotations

from collections import defaultdict

from scenerag.retrieval.hierarchical import (
    DOC_DESCRIPTION,
    DOC_PHRASE,
    OBJECT_LEVEL,
    HierarchicalIndex,
    symbol_of,
)


class FlatRetriever:
    """The non-hierarchical baseline: the whole query embedded once and matched against every object's
    phrase and description documents (no floors, rooms, anchors or keyframes)."""

    def __init__(self, index: HierarchicalIndex, k: int = 64, phrase_weight: float = 0.6) -> None:
        self.index = index
        self.k = k
        self.phrase_weight = phrase_weight

    def rank(self, query: str) -> list[str]:
        vector = self.index.embedder.embed([query])[0]
        docs = self.index.levels[OBJECT_LEVEL]
        parts: dict[str, dict[str, float]] = defaultdict(dict)
        for doc in (DOC_PHRASE, DOC_DESCRIPTION):
            for hit in docs.search(vector, self.k, filter={"doc": doc}):
                parts[symbol_of(hit.id)][doc] = hit.score
        scores = {}
        for symbol, p in parts.items():
            for doc in (DOC_PHRASE, DOC_DESCRIPTION):
                if doc not in p and (entry := docs.get(f"{symbol}#{doc}")) is not None:
                    p[doc] = float(entry.vector @ vector)
            w = self.phrase_weight if DOC_DESCRIPTION in p else 1.0
            scores[symbol] = w * p.get(DOC_PHRASE, 0.0) + (1 - w) * p.get(DOC_DESCRIPTION, 0.0)
        return sorted(scores, key=lambda s: (-scores[s], s))


__all__ = ["FlatRetriever"]
