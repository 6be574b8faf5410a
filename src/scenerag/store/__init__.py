"""Graph databases holding scene graphs: the ``GraphStore`` contract and its backends.

``open_store("DIR")`` opens the embedded ArcadeDB default; ``open_store("bolt://host:7687")`` any Bolt
server (Neo4j, Memgraph, ArcadeDB server). Backends import their drivers lazily.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from scenerag.store.base import CypherStore, GraphStore, QueryError, QueryResult
from scenerag.store.schema import GraphSchema

BOLT_SCHEMES = ("bolt://", "bolt+s://", "bolt+ssc://", "neo4j://", "neo4j+s://", "neo4j+ssc://")


def is_bolt_uri(target: str) -> bool:
    return target.startswith(BOLT_SCHEMES)


def open_store(target: str | Path, *, create: bool = True, **kwargs: Any) -> CypherStore:
    """Open the store at ``target``: a directory (embedded ArcadeDB) or a Bolt URI."""
    text = str(target)
    if is_bolt_uri(text):
        from scenerag.store.bolt import BoltStore

        return BoltStore(text, **kwargs)
    from scenerag.store.arcade import ArcadeStore

    return ArcadeStore(text, create=create, **kwargs)


__all__ = [
    "CypherStore",
    "GraphSchema",
    "GraphStore",
    "QueryError",
    "QueryResult",
    "is_bolt_uri",
    "open_store",
]
