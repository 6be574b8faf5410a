"""Scene-graph nodes as retrievable documents.

Contract: each node yields one *entity document* (id = its symbol; text = its class / open-vocabulary label,
with a short ``name`` attribute if it has one) and one *sub-document* per long free-text attribute
(``description``, captions, summaries: text of at least ``subdocument_min_chars`` with a space; id
``<symbol>#<field>``), whose hits resolve to the node. Every document of a node carries the node's
metadata: its scalar and flat-list attributes, ``symbol``, ``label``, ``class``, ``position`` and ``x``/``y``/``z``
and, when a graph is given, the symbols of its ``room``/``floor``/``building`` ancestors.
``text_hash`` changes exactly when some document text changes, ``meta_hash`` when the metadata does.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from scenerag.graph import ontology as ont
from scenerag.graph.model import Node, SceneGraph
from scenerag.retrieval.vector_index import Metadata

SUBDOCUMENT_SEPARATOR = "#"
ANCESTOR_KEYS: dict[str, str] = {ont.ROOM: "room", ont.FLOOR: "floor", ont.BUILDING: "building"}
"""Metadata key holding the symbol of the nearest ancestor with each of these labels."""
STRUCTURAL_KEYS: frozenset[str] = frozenset({"symbol", "label", "class", "position", "x", "y", "z"})

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SEPARATORS = re.compile(r"[_\-]+")
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class DocumentConfig:
    """How nodes become documents.

    ``labels``: node labels to index (None: all); ``subdocument_min_chars``: a string attribute (or the
    description) at least this long and containing whitespace becomes a sub-document instead of metadata;
    ``name_fields``: attributes holding a short name added to the entity text when at most
    ``max_name_chars`` long; ``include_ancestors``: add ``room``/``floor``/``building`` from the graph.
    """

    labels: tuple[str, ...] | None = None
    subdocument_min_chars: int = 24
    name_fields: tuple[str, ...] = ("name",)
    max_name_chars: int = 40
    include_ancestors: bool = True


@dataclass(frozen=True, slots=True)
class EntityDocument:
    """One embeddable text of a node: the entity document (``field`` None) or a sub-document."""

    doc_id: str
    symbol: str
    text: str
    field: str | None
    metadata: Metadata

    @property
    def is_subdocument(self) -> bool:
        return self.field is not None


@dataclass(frozen=True, slots=True)
class NodeDocuments:
    """All documents of one node (entity document first) with hashes of their texts and metadata."""

    symbol: str
    documents: tuple[EntityDocument, ...]
    text_hash: str
    meta_hash: str
    ancestors: dict[str, str]


def subdocument_id(symbol: str, field: str) -> str:
    return f"{symbol}{SUBDOCUMENT_SEPARATOR}{field}"


def split_document_id(doc_id: str) -> tuple[str, str | None]:
    """``"O12#description"`` -> ``("O12", "description")``; ``"O12"`` -> ``("O12", None)``."""
    symbol, sep, field = doc_id.partition(SUBDOCUMENT_SEPARATOR)
    return symbol, (field if sep else None)


def label_text(class_name: str) -> str:
    """Readable text of a class label: ``coffee_table`` / ``CoffeeTable`` -> ``coffee table``."""
    text = _SEPARATORS.sub(" ", class_name.strip())
    if " " not in text and not text.isupper():
        text = _CAMEL.sub(" ", text)
    return _SPACES.sub(" ", text).strip().lower()


def _is_long_text(value: object, min_chars: int) -> bool:
    return (
        isinstance(value, str) and len(value.strip()) >= min_chars and any(c.isspace() for c in value.strip())
    )


def _digest(payload: object) -> str:
    """Stable content hash of nested lists/tuples of JSON scalars (``repr`` is exact for them)."""
    return hashlib.blake2b(repr(payload).encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()


def node_documents(
    node: Node, config: DocumentConfig | None = None, *, ancestors: Mapping[str, str] | None = None
) -> NodeDocuments:
    """Documents of ``node``; ``ancestors`` maps ``room``/``floor``/``building`` to symbols (optional)."""
    config = config or DocumentConfig()
    metadata: Metadata = {}
    subtexts: dict[str, str] = {}
    if node.description is not None:
        if _is_long_text(node.description, config.subdocument_min_chars):
            subtexts[ont.DESCRIPTION_KEY] = node.description.strip()
        else:
            metadata[ont.DESCRIPTION_KEY] = node.description
    for key, value in node.attributes.items():
        if _is_long_text(value, config.subdocument_min_chars) and key not in config.name_fields:
            subtexts[key] = str(value).strip()
        else:
            metadata[key] = list(value) if isinstance(value, list) else value
    anc = dict(ancestors or {})
    for key, symbol in anc.items():
        metadata.setdefault(key, symbol)
    x, y, z = node.position
    metadata.update(
        symbol=node.symbol, label=node.label, **{"class": node.class_name}, position=[x, y, z], x=x, y=y, z=z
    )

    text = label_text(node.class_name) or node.class_name
    for field in config.name_fields:
        name = node.attributes.get(field)
        if isinstance(name, str) and name.strip() and len(name.strip()) <= config.max_name_chars:
            readable = name.strip()
            if readable.lower() != text:
                text = f"{readable} ({text})"
            break

    documents = [EntityDocument(node.symbol, node.symbol, text, None, metadata)]
    for field in sorted(subtexts):
        documents.append(
            EntityDocument(subdocument_id(node.symbol, field), node.symbol, subtexts[field], field, metadata)
        )
    text_hash = _digest([(d.doc_id, d.text) for d in documents])
    meta_hash = _digest(sorted(metadata.items()))
    return NodeDocuments(node.symbol, tuple(documents), text_hash, meta_hash, anc)


class AncestorResolver:
    """Nearest ``Room``/``Floor``/``Building`` ancestor symbols of nodes via CONTAINS / HAS_ELEMENT parents.

    Results are memoised, so resolving every node of a graph costs one pass over the hierarchy.
    """

    def __init__(self, graph: SceneGraph) -> None:
        self._graph = graph
        self._memo: dict[str, dict[str, str]] = {}

    def __call__(self, symbol: str) -> dict[str, str]:
        return dict(self._resolve(symbol))

    def _resolve(self, symbol: str) -> dict[str, str]:
        cached = self._memo.get(symbol)
        if cached is not None:
            return cached
        self._memo[symbol] = {}  # placeholder: a malformed cyclic hierarchy ends here instead of recursing
        found: dict[str, str] = {}
        for edge_type in (ont.CONTAINS, ont.HAS_ELEMENT):
            for parent in self._graph.parents(symbol, edge_type):
                key = ANCESTOR_KEYS.get(parent.label)
                if key is not None:
                    found.setdefault(key, parent.symbol)
                for k, v in self._resolve(parent.symbol).items():
                    found.setdefault(k, v)
        self._memo[symbol] = found
        return found


def graph_documents(graph: SceneGraph, config: DocumentConfig | None = None) -> Iterator[NodeDocuments]:
    """Documents of every node of ``graph`` whose label ``config.labels`` selects."""
    config = config or DocumentConfig()
    wanted = None if config.labels is None else frozenset(config.labels)
    resolve = AncestorResolver(graph) if config.include_ancestors else None
    for node in graph.nodes():
        if wanted is not None and node.label not in wanted:
            continue
        yield node_documents(node, config, ancestors=resolve(node.symbol) if resolve else None)
