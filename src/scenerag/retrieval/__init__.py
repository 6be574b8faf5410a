"""Retrieval over scene graphs: text embedders, an exact filtered vector index keyed by node symbol, and
entity documents with incremental updates (``EntityStore``).

Heavy dependencies (torch / sentence-transformers, faiss, openai) are imported only when an embedder or
index is built, so importing this package is cheap.
"""

from scenerag.retrieval.documents import (
    DocumentConfig,
    EntityDocument,
    NodeDocuments,
    graph_documents,
    label_text,
    node_documents,
)
from scenerag.retrieval.embeddings import (
    CachingEmbedder,
    Embedder,
    EmbedderStats,
    EmbeddingError,
    ProgressFn,
    make_embedder,
)
from scenerag.retrieval.embeddings_numpy import NumpyMiniLMEmbedder
from scenerag.retrieval.embeddings_openai import OpenAIEmbedder
from scenerag.retrieval.embeddings_st import SentenceTransformerEmbedder
from scenerag.retrieval.entity_store import (
    EntityHit,
    EntityStore,
    SyncReport,
    database_fingerprint,
    read_source_record,
    vectors_dir,
    vectors_home,
    write_source_record,
)
from scenerag.retrieval.vector_index import (
    Entry,
    FilterError,
    Hit,
    IndexMismatchError,
    VectorIndex,
    VectorIndexError,
    compile_filter,
)

__all__ = [
    "CachingEmbedder",
    "DocumentConfig",
    "Embedder",
    "EmbedderStats",
    "EmbeddingError",
    "EntityDocument",
    "EntityHit",
    "EntityStore",
    "Entry",
    "FilterError",
    "Hit",
    "IndexMismatchError",
    "NodeDocuments",
    "NumpyMiniLMEmbedder",
    "OpenAIEmbedder",
    "ProgressFn",
    "SentenceTransformerEmbedder",
    "SyncReport",
    "VectorIndex",
    "VectorIndexError",
    "compile_filter",
    "database_fingerprint",
    "graph_documents",
    "label_text",
    "make_embedder",
    "node_documents",
    "read_source_record",
    "vectors_dir",
    "vectors_home",
    "write_source_record",
]
