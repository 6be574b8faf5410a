"""The methods Tables III and IV compare, as :data:`GroundingMethod` callables: a query text in, a
:class:`GroundingOutcome` (one ranking per variant, timings, usage) out. The methods themselves live with
the methods (:class:`~scenerag.retrieval.flat.FlatRetriever`, ``HierarchicalRAG``); these adapters only time
and record them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from scenerag.llm.base import Usage
from scenerag.retrieval.flat import FlatRetriever


@dataclass
class GroundingOutcome:
    """What a method returned for one query: rankings per variant (the first symbol is its answer)."""

    rankings: dict[str, list[str]]
    retrieval_ms: float = 0.0
    usage: Usage = field(default_factory=Usage)
    llm_calls: int = 0
    wall_s: float = 0.0
    error: str | None = None
    decomposition: dict[str, Any] | None = None


GroundingMethod = Callable[[str], GroundingOutcome]
"""Maps a query text to a :class:`GroundingOutcome`; one method may report several variants."""


def flat_method(retriever: FlatRetriever, name: str = "flat") -> GroundingMethod:
    """A :class:`GroundingMethod` over the flat baseline: variant ``name`` is its ranking, timed."""

    def run(query: str) -> GroundingOutcome:
        started = time.perf_counter()
        ranked = retriever.rank(query)
        ms = (time.perf_counter() - started) * 1000.0
        return GroundingOutcome({name: ranked}, retrieval_ms=ms, wall_s=ms / 1000.0)

    return run


def keysg_method(rag: Any, name: str) -> GroundingMethod:
    """A :class:`GroundingMethod` over a ``HierarchicalRAG``: variant ``name`` is its grounding; when the
    LLM selects the object, variant ``name`` with ``-rag`` replaced by ``-embed`` is the retriever's own
    ranking for the same decomposition (the paper's "w/o RAG")."""

    def run(query: str) -> GroundingOutcome:
        result = rag.ground(query)
        rankings = {name: list(result.ranked)}
        if rag.config.select_with_llm and "-rag" in name:
            rankings[name.replace("-rag", "-embed")] = list(result.context.ranked_symbols)
        return GroundingOutcome(
            rankings,
            retrieval_ms=result.retrieval_ms,
            usage=result.usage,
            llm_calls=result.llm_calls,
            wall_s=result.wall_s,
            error=result.error,
            decomposition=result.decomposition.to_dict(),
        )

    return run


__all__ = ["GroundingMethod", "GroundingOutcome", "flat_method", "keysg_method"]
