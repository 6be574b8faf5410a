"""KeySG hierarchical multimodal retrieval (Werby et al., §III-E): one vector index per level of the scene
graph and a top-down search that keeps only the floors, rooms, objects and keyframes a query needs.

Contract:
- ``HierarchicalIndex.build(graph, embedder)`` embeds, per level, floor summaries and names ("ground floor",
  "floor 1"), room summaries and class names, keyframe descriptions, and per object a short phrase
  ("red chair") and its description; every document carries the ``floor``/``room`` symbols of its node, so
  lower levels are searched only inside the chosen floors and rooms. ``save``/``load`` persist it next to
  the build or database (:func:`index_dir`) with a fingerprint of the graph; ``open_or_build`` rebuilds
  when the graph changed. An optional visual route (keyframe images and object crops through a
  :class:`CrossModalEncoder`, i.e. CLIP) adds image-text similarity when an encoder is at hand; offline
  there is none and the text route stands alone (``HierarchicalIndex.visual_status`` says which).
- ``HierarchicalRetriever.retrieve(decomposition)`` maximises
  ``P(C|q) ≈ P(F|q)·P(R|F,q)·Π P(o|R,q)·Π P(s|R,q)``: each factor is a softmax over cosine similarities
  (temperature ``RetrievalConfig.temperature``), floors and rooms are cut to their top ``k``, and every
  candidate object is scored by the sum of the log-factors — its floor, its room, its own match, the best
  match of each anchor object in the same room discounted by distance, and the best keyframe of its room.
- ``RuleBasedDecomposer`` turns a query into a :class:`QueryDecomposition` (target floor, room, object and
  anchor objects) deterministically, with the index's own room and object vocabulary.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import secrets
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from scenerag.errors import SceneRagError
from scenerag.graph import ontology as ont
from scenerag.graph.model import Node, SceneGraph
from scenerag.retrieval.documents import AncestorResolver, label_text
from scenerag.retrieval.embeddings import Embedder
from scenerag.retrieval.vector_index import FilterSpec, Hit, VectorIndex

FLOOR_LEVEL = "floor"
ROOM_LEVEL = "room"
KEYFRAME_LEVEL = "keyframe"
OBJECT_LEVEL = "object"
LEVELS: tuple[str, ...] = (FLOOR_LEVEL, ROOM_LEVEL, KEYFRAME_LEVEL, OBJECT_LEVEL)
OBJECT_LABELS: tuple[str, ...] = (ont.OBJECT, ont.FUNCTIONAL_ELEMENT)

INDEX_DIRNAME = "hierarchical_index"
MANIFEST_FILE = "manifest.json"
RECORDS_FILE = "records.json"
FORMAT_NAME = "scenerag-hierarchical-index"
FORMAT_VERSION = 1

DOC_ALIAS = "alias"
DOC_SUMMARY = "summary"
DOC_NAME = "name"
DOC_PHRASE = "phrase"
DOC_DESCRIPTION = "description"
DOC_VIEW = "view"

VISUAL_OFFLINE = (
    "text only: no cross-modal (CLIP) encoder was given, so keyframe images and object crops are not indexed"
)


class HierarchicalIndexError(SceneRagError):
    """A hierarchical index that cannot be built, read or queried (names the file or field at fault)."""


# -- floors: names and ordinal words ---------------------------------------------------------------------
_ORDINAL_WORDS: tuple[str, ...] = (
    "first",
    "second",
    "third",
    "fourth",
    "fifth",
    "sixth",
    "seventh",
    "eighth",
    "ninth",
    "tenth",
)
_FLOOR_NOUN = r"(?:floor|storey|story|level)"
_FLOOR_WORD = re.compile(
    r"\b(?:(?:on|at|of|from)\s+)?(?:the\s+)?(ground|top|basement|"
    + "|".join(_ORDINAL_WORDS)
    + r"|\d+(?:st|nd|rd|th))\s+"
    + _FLOOR_NOUN
    + r"\b",
    re.IGNORECASE,
)
_FLOOR_NUMBER = re.compile(
    r"\b(?:(?:on|at|of|from)\s+)?(?:the\s+)?" + _FLOOR_NOUN + r"\s+(\d+)\b", re.IGNORECASE
)


def ordinal_word(n: int) -> str:
    """``1 -> "first"`` ... ``10 -> "tenth"``, else ``"11th"``."""
    if 1 <= n <= len(_ORDINAL_WORDS):
        return _ORDINAL_WORDS[n - 1]
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def floor_aliases(level: int, *, top: bool = False) -> list[str]:
    """Names of the storey with index ``level`` (0 = ground): ``floor 0``, ``level 0``, ``ground floor``,
    ``first floor`` (American counting: the ground floor is the first), ``top floor`` for the highest."""
    names = [f"floor {level}", f"level {level}", f"{ordinal_word(level + 1)} floor"]
    if level == 0:
        names.insert(0, "ground floor")
    if top:
        names.append("top floor")
    return names


def parse_floor_level(text: str, n_floors: int | None = None) -> int | None:
    """The storey index (0 = ground) a phrase names, or None: ``ground floor`` and ``first floor`` -> 0,
    ``second floor``/``2nd floor`` -> 1, ``floor 2``/``level 2`` -> 2 (the graph's own numbering),
    ``top floor`` -> ``n_floors - 1`` when known, ``basement`` -> -1."""
    match = _FLOOR_WORD.search(text)
    if match is not None:
        word = match.group(1).lower()
        if word == "ground":
            return 0
        if word == "basement":
            return -1
        if word == "top":
            return None if n_floors is None else n_floors - 1
        if word in _ORDINAL_WORDS:
            return _ORDINAL_WORDS.index(word)
        return int(re.sub(r"\D", "", word)) - 1
    match = _FLOOR_NUMBER.search(text)
    if match is not None:
        return int(match.group(1))
    return None


# -- query decomposition ------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class QueryDecomposition:
    """What a query asks for: the target object (text), where (floor, room, as written), the anchor objects
    it is described relative to, the spatial ``relation`` to them, and the floor index if it names one."""

    query: str
    target_object: str
    target_room: str | None = None
    target_floor: str | None = None
    anchors: tuple[str, ...] = ()
    relation: str | None = None
    floor_level: int | None = None
    source: str = "rules"

    def __post_init__(self) -> None:
        if not isinstance(self.query, str) or not self.query.strip():
            raise HierarchicalIndexError("a query decomposition needs the non-empty query text")
        if not isinstance(self.target_object, str) or not self.target_object.strip():
            raise HierarchicalIndexError(
                f"query {self.query!r}: the decomposition has no target object",
                hint="name the object to find (the whole query is used when nothing else is known)",
            )

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["anchors"] = list(self.anchors)
        return out


_RELATIONS: tuple[str, ...] = (
    "on top of",
    "in front of",
    "to the left of",
    "to the right of",
    "left of",
    "right of",
    "next to",
    "close to",
    "closest to",
    "nearest to",
    "nearest",
    "closest",
    "far from",
    "farthest from",
    "across from",
    "opposite",
    "between",
    "beside",
    "besides",
    "near",
    "by",
    "behind",
    "above",
    "below",
    "under",
    "underneath",
    "beneath",
    "facing",
    "against",
    "inside",
    "on",
    "with",
    "of",
    "at",
)
_RELATION_RE = re.compile(r"\b(" + "|".join(re.escape(r) for r in _RELATIONS) + r")\b", re.IGNORECASE)
_LEADING_FILLER = re.compile(
    r"^(?:(?:please\s+)?(?:find|show(?:\s+me)?|locate|get|point\s+to|go\s+to|where\s+(?:is|are)|which|what|"
    r"how\s+many|is\s+there|are\s+there|count|list|select|choose|pick|give\s+me)\b\s*)+",
    re.IGNORECASE,
)
_DETERMINERS = re.compile(
    r"^(?:(?:the|a|an|this|that|these|those|all|any|some|one|of|is|are)\s+)+", re.IGNORECASE
)
_TRAILING = re.compile(
    r"\s+(?:is|are|located|placed|standing|there|in|on|at|of|objects?|items?|nodes?)$", re.IGNORECASE
)
_ROOM_SYNONYMS: dict[str, str] = {
    "lounge": "living room",
    "sitting room": "living room",
    "family room": "living room",
    "restroom": "bathroom",
    "washroom": "bathroom",
    "toilet room": "bathroom",
    "wc": "bathroom",
    "study": "office",
    "workroom": "office",
    "hallway": "corridor",
    "hall": "corridor",
    "staircase": "stairwell",
    "stair hall": "stairwell",
    "utility room": "laundry room",
    "bed room": "bedroom",
    "dining area": "dining room",
}


def _clean_phrase(text: str) -> str:
    text = " ".join(re.sub(r"[?!.,;:\"]", " ", text).split())
    for _ in range(3):
        text = _LEADING_FILLER.sub("", text).strip()
        text = _DETERMINERS.sub("", text).strip()
        text = _TRAILING.sub("", text).strip()
    return text


class RuleBasedDecomposer:
    """Deterministic query decomposition with the scene's vocabulary (no LLM).

    The floor is found by :func:`parse_floor_level` patterns, the room by the longest room class (or a known
    synonym: lounge, hallway, ...) in the query, the anchors after the first spatial relation word ("next
    to", "on", "near", ...), and the target is what is left before that word, without fillers ("find the",
    "which").
    """

    def __init__(self, room_vocabulary: Iterable[str], n_floors: int | None = None) -> None:
        names = {label_text(v) for v in room_vocabulary if v and v.strip()}
        names |= {s for s, canonical in _ROOM_SYNONYMS.items() if canonical in names}
        self.room_names = sorted(names, key=lambda s: (-len(s), s))
        self.n_floors = n_floors
        pattern = "|".join(re.escape(n) for n in self.room_names) or r"(?!x)x"
        self._room_re = re.compile(
            r"\b(?:in|inside|of|within|from|at|into)\s+(?:the\s+|a\s+|an\s+)?(" + pattern + r")s?\b",
            re.IGNORECASE,
        )

    @classmethod
    def for_index(cls, index: HierarchicalIndex) -> RuleBasedDecomposer:
        return cls(index.room_classes(), len(index.floor_levels()))

    def decompose(self, query: str) -> QueryDecomposition:
        if not isinstance(query, str) or not query.strip():
            raise HierarchicalIndexError("cannot decompose an empty query")
        text = " " + " ".join(query.split()) + " "
        floor_text: str | None = None
        level: int | None = None
        for regex in (_FLOOR_WORD, _FLOOR_NUMBER):
            match = regex.search(text)
            if match is not None:
                floor_text = _clean_phrase(match.group(0))
                level = parse_floor_level(match.group(0), self.n_floors)
                text = text[: match.start()] + " " + text[match.end() :]
                break
        room_text: str | None = None
        rooms = list(self._room_re.finditer(text))
        if rooms:
            match = rooms[-1]
            room_text = _ROOM_SYNONYMS.get(match.group(1).lower(), match.group(1).lower())
            text = text[: match.start()] + " " + text[match.end() :]
        text = " ".join(text.split())
        relation: str | None = None
        anchors: list[str] = []
        target = text
        rel = _RELATION_RE.search(text)
        while rel is not None and not _clean_phrase(text[: rel.start()]):
            rel = _RELATION_RE.search(text, rel.end())  # "on the ..." at the very start is not a relation
        if rel is not None:
            target = text[: rel.start()]
            relation = rel.group(1).lower()
            rest = text[rel.end() :]
            for part in re.split(r"\band\b|,|\bor\b|" + _RELATION_RE.pattern, rest, flags=re.IGNORECASE):
                if part is None or _RELATION_RE.fullmatch(part.strip() or "-"):
                    continue
                phrase = _clean_phrase(part)
                if phrase and phrase.lower() not in (a.lower() for a in anchors):
                    anchors.append(phrase)
        target_text = _clean_phrase(target) or _clean_phrase(text) or query.strip()
        return QueryDecomposition(
            query=query.strip(),
            target_object=target_text,
            target_room=room_text,
            target_floor=floor_text,
            anchors=tuple(anchors),
            relation=relation,
            floor_level=level,
            source="rules",
        )


# -- visual route ---------------------------------------------------------------------------------------
@runtime_checkable
class CrossModalEncoder(Protocol):
    """Images and texts in one vector space (CLIP): ``encode`` images (H, W, 3) uint8 and ``encode_text``
    texts to L2-normalised rows. ``encode`` alone is the build pipeline's ``ImageEncoder`` protocol."""

    name: str

    def encode(self, images: Sequence[np.ndarray]) -> np.ndarray: ...

    def encode_text(self, texts: Sequence[str]) -> np.ndarray: ...


FrameLoader = Callable[[int], np.ndarray]
"""Returns the RGB image (H, W, 3) uint8 of a frame index of the sequence a graph was built from."""


def clip_cross_modal_encoder(model_path: str, *, backend: str = "transformers", device: str = "cpu") -> Any:
    """A CLIP :class:`CrossModalEncoder` from a local model folder: ``scenerag.build``'s
    ``ClipImageEncoder`` for images plus CLIP's text tower (nothing is downloaded)."""
    from scenerag.build.keyframes import ClipImageEncoder

    class ClipTextImageEncoder(ClipImageEncoder):
        """``ClipImageEncoder`` with the text tower of the same checkpoint."""

        def __init__(self) -> None:
            super().__init__(model_path, backend=backend, device=device)
            if backend == "transformers":
                from transformers import CLIPTokenizer

                self._tokenizer = CLIPTokenizer.from_pretrained(model_path, local_files_only=True)
            else:
                import open_clip

                self._tokenizer = open_clip.get_tokenizer("ViT-B-32")

        def encode_text(self, texts: Sequence[str]) -> np.ndarray:
            import torch

            with torch.no_grad():
                if backend == "transformers":
                    tokens = self._tokenizer(list(texts), padding=True, return_tensors="pt")
                    feats = self._model.get_text_features(
                        input_ids=tokens["input_ids"].to(device),
                        attention_mask=tokens["attention_mask"].to(device),
                    )
                else:
                    feats = self._model.encode_text(self._tokenizer(list(texts)).to(device))
            out = feats.float().cpu().numpy()
            return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)

    return ClipTextImageEncoder()


def sequence_frame_loader(sequence_path: str | Path) -> FrameLoader:
    """A :data:`FrameLoader` over the posed RGB-D sequence at ``sequence_path`` (any supported layout)."""
    from scenerag.build.datasets import open_sequence

    sequence = open_sequence(sequence_path)
    return lambda frame: np.asarray(sequence[int(frame)].rgb)


# -- node records -------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class NodeRecord:
    """What the retriever and the context bundle need of one indexed node."""

    symbol: str
    label: str
    class_name: str
    name: str
    description: str
    position: tuple[float, float, float]
    size: tuple[float, float, float] | None
    room: str
    floor: str
    level: int | None = None
    color: str = ""
    sees: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["sees"] = list(self.sees)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> NodeRecord:
        size = data.get("size")
        return cls(
            symbol=str(data["symbol"]),
            label=str(data["label"]),
            class_name=str(data["class_name"]),
            name=str(data.get("name", "")),
            description=str(data.get("description", "")),
            position=tuple(float(v) for v in data["position"]),  # type: ignore[arg-type]
            size=None if size is None else tuple(float(v) for v in size),  # type: ignore[arg-type]
            room=str(data.get("room", "")),
            floor=str(data.get("floor", "")),
            level=None if data.get("level") is None else int(data["level"]),
            color=str(data.get("color", "")),
            sees=tuple(str(s) for s in data.get("sees", ())),
        )


def _level_of(node: Node, order: int) -> int:
    for key in ("level", "floor_level"):
        value = node.attributes.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return int(value)
    return order


def _records(graph: SceneGraph) -> dict[str, NodeRecord]:
    """Records of the floors, rooms, keyframes, objects and functional elements of ``graph``."""
    resolve = AncestorResolver(graph)
    floors = sorted(graph.nodes(ont.FLOOR), key=lambda n: (n.position[2], n.symbol))
    levels = {f.symbol: _level_of(f, i) for i, f in enumerate(floors)}
    out: dict[str, NodeRecord] = {}
    wanted = (ont.FLOOR, ont.ROOM, ont.KEYFRAME, *OBJECT_LABELS)
    for node in graph.nodes():
        if node.label not in wanted:
            continue
        anc = resolve(node.symbol)
        room = node.symbol if node.label == ont.ROOM else anc.get("room", "")
        if not room and isinstance(node.attributes.get("room"), str) and node.attributes["room"] in graph:
            room = str(node.attributes["room"])
        floor = node.symbol if node.label == ont.FLOOR else anc.get("floor", "")
        if not floor and room:
            floor = resolve(room).get("floor", "")
        sees: tuple[str, ...] = ()
        if node.label == ont.KEYFRAME:
            sees = tuple(n.symbol for n in graph.neighbors(node.symbol, ont.SEES))
        name = node.attributes.get("name")
        color = node.attributes.get("color")
        out[node.symbol] = NodeRecord(
            symbol=node.symbol,
            label=node.label,
            class_name=node.class_name,
            name=name if isinstance(name, str) else "",
            description=(node.description or "").strip(),
            position=tuple(float(v) for v in (node.bbox_center or node.position)),  # type: ignore[arg-type]
            size=None if node.bbox_dim is None else tuple(float(v) for v in node.bbox_dim),  # type: ignore[arg-type]
            room=room,
            floor=floor,
            level=levels.get(floor),
            color=label_text(color) if isinstance(color, str) else "",
            sees=sees,
        )
    return out


def _object_phrase(record: NodeRecord) -> str:
    text = label_text(record.class_name) or record.class_name
    if record.color and not text.startswith(record.color):
        text = f"{record.color} {text}"
    return text


def _documents(records: Mapping[str, NodeRecord]) -> dict[str, list[tuple[str, str, dict[str, Any]]]]:
    """Per level: ``(doc id, text, metadata)`` of every document."""
    docs: dict[str, list[tuple[str, str, dict[str, Any]]]] = {level: [] for level in LEVELS}
    top = max((r.level for r in records.values() if r.label == ont.FLOOR and r.level is not None), default=0)
    for r in records.values():
        meta: dict[str, Any] = {"symbol": r.symbol, "room": r.room, "floor": r.floor}
        if r.label == ont.FLOOR:
            level = r.level if r.level is not None else 0
            for i, alias in enumerate(floor_aliases(level, top=level == top and top > 0)):
                docs[FLOOR_LEVEL].append((f"{r.symbol}#{DOC_ALIAS}{i}", alias, {**meta, "doc": DOC_ALIAS}))
            if r.name and r.name.lower() not in floor_aliases(level):
                docs[FLOOR_LEVEL].append((f"{r.symbol}#{DOC_NAME}", r.name, {**meta, "doc": DOC_NAME}))
            if r.description:
                docs[FLOOR_LEVEL].append(
                    (f"{r.symbol}#{DOC_SUMMARY}", r.description, {**meta, "doc": DOC_SUMMARY})
                )
        elif r.label == ont.ROOM:
            docs[ROOM_LEVEL].append(
                (
                    f"{r.symbol}#{DOC_NAME}",
                    label_text(r.class_name) or r.class_name,
                    {**meta, "doc": DOC_NAME},
                )
            )
            if r.description:
                docs[ROOM_LEVEL].append(
                    (f"{r.symbol}#{DOC_SUMMARY}", r.description, {**meta, "doc": DOC_SUMMARY})
                )
        elif r.label == ont.KEYFRAME:
            if r.description:
                docs[KEYFRAME_LEVEL].append((r.symbol, r.description, {**meta, "doc": DOC_VIEW}))
        else:
            extra = {"label": r.label, "class": r.class_name}
            docs[OBJECT_LEVEL].append(
                (f"{r.symbol}#{DOC_PHRASE}", _object_phrase(r), {**meta, **extra, "doc": DOC_PHRASE})
            )
            if r.description:
                docs[OBJECT_LEVEL].append(
                    (
                        f"{r.symbol}#{DOC_DESCRIPTION}",
                        r.description,
                        {**meta, **extra, "doc": DOC_DESCRIPTION},
                    )
                )
    return docs


def graph_fingerprint(graph: SceneGraph) -> str:
    """Hash of everything the index depends on (indexed nodes' texts, classes, places in the hierarchy,
    positions); changes exactly when the index must be rebuilt."""
    digest = hashlib.blake2b(digest_size=16)
    for symbol, record in sorted(_records(graph).items()):
        digest.update(json.dumps(record.to_json(), sort_keys=True, default=str).encode("utf-8"))
        digest.update(symbol.encode("utf-8"))
    return digest.hexdigest()


def index_dir(build_or_db_dir: str | Path) -> Path:
    """Where a hierarchical index lives next to a build output or database directory."""
    return Path(build_or_db_dir) / INDEX_DIRNAME


def symbol_of(doc_id: str) -> str:
    return doc_id.partition("#")[0]


# -- the index ------------------------------------------------------------------------------------------
class HierarchicalIndex:
    """Per-level vector indexes of one scene graph plus the node records (see the module docstring)."""

    def __init__(
        self,
        embedder: Embedder,
        levels: Mapping[str, VectorIndex],
        records: Mapping[str, NodeRecord],
        *,
        fingerprint: str = "",
        visual: Mapping[str, VectorIndex] | None = None,
        visual_encoder: CrossModalEncoder | None = None,
        visual_status: str = VISUAL_OFFLINE,
    ) -> None:
        missing = [level for level in LEVELS if level not in levels]
        if missing:
            raise HierarchicalIndexError(f"hierarchical index is missing level(s) {', '.join(missing)}")
        self.embedder = embedder
        self.levels = dict(levels)
        self.records = dict(records)
        self.fingerprint = fingerprint
        self.visual = dict(visual or {})
        self.visual_encoder = visual_encoder
        self.visual_status = visual_status
        self._positions: dict[str, np.ndarray] = {
            s: np.asarray(r.position, dtype=np.float64) for s, r in self.records.items()
        }
        self._colour_words: frozenset[str] | None = None
        self._object_matrix: np.ndarray | None = None
        self._object_rows: dict[str, int] = {}
        self._floor_levels = {
            r.symbol: (r.level if r.level is not None else 0)
            for r in self.records.values()
            if r.label == ont.FLOOR
        }
        self._rooms_by_floor: dict[str, list[str]] = {}
        for r in self.records.values():
            if r.label == ont.ROOM:
                self._rooms_by_floor.setdefault(r.floor, []).append(r.symbol)

    # -- construction -----------------------------------------------------------------------------------
    @classmethod
    def build(
        cls,
        graph: SceneGraph,
        embedder: Embedder,
        *,
        visual_encoder: CrossModalEncoder | None = None,
        frame_loader: FrameLoader | None = None,
        batch_size: int = 64,
    ) -> HierarchicalIndex:
        """Embed every level of ``graph``. With ``visual_encoder`` and ``frame_loader`` also encode keyframe
        images and object crops (each object's ``best_view_keyframe`` / ``best_view_bbox``)."""
        records = _records(graph)
        if not any(r.label in OBJECT_LABELS for r in records.values()):
            raise HierarchicalIndexError(
                "the scene graph has no Object or FunctionalElement nodes to index",
                hint="build the KeySG graph first (scenerag build)",
            )
        documents = _documents(records)
        texts = sorted({text for docs in documents.values() for _, text, _ in docs})
        vectors = embedder.embed(texts, batch_size=batch_size) if texts else np.zeros((0, embedder.dim))
        row_of = {text: i for i, text in enumerate(texts)}
        levels: dict[str, VectorIndex] = {}
        for level, docs in documents.items():
            index = VectorIndex.for_embedder(embedder)
            if docs:
                index.add(
                    [d for d, _, _ in docs],
                    vectors[[row_of[t] for _, t, _ in docs]],
                    [m for _, _, m in docs],
                )
            levels[level] = index
        visual: dict[str, VectorIndex] = {}
        status = VISUAL_OFFLINE
        if visual_encoder is not None:
            if frame_loader is None:
                raise HierarchicalIndexError(
                    "a visual encoder needs a frame loader to read the keyframe images",
                    hint="pass frame_loader=sequence_frame_loader(<sequence path>)",
                )
            visual = _visual_indexes(graph, records, visual_encoder, frame_loader)
            status = (
                f"text + visual ({visual_encoder.name}): {len(visual[KEYFRAME_LEVEL])} keyframe images, "
                f"{len(visual[OBJECT_LEVEL])} object crops"
            )
        return cls(
            embedder,
            levels,
            records,
            fingerprint=graph_fingerprint(graph),
            visual=visual,
            visual_encoder=visual_encoder,
            visual_status=status,
        )

    # -- introspection ------------------------------------------------------------------------------------
    def __repr__(self) -> str:
        sizes = ", ".join(f"{level}={len(self.levels[level])}" for level in LEVELS)
        return f"HierarchicalIndex({sizes}; {self.visual_status.split(':')[0]})"

    @property
    def has_visual(self) -> bool:
        return bool(self.visual) and self.visual_encoder is not None

    def object_document_rows(self, doc_ids: Sequence[str]) -> tuple[list[int], np.ndarray]:
        """Rows of ``doc_ids`` (-1 when absent) in a dense matrix of the object level's vectors, built on
        first use from the index (``dim`` floats per document; a lookup table for the similarity of an
        object's other document, which FAISS did not return)."""
        if self._object_matrix is None:
            index = self.levels[OBJECT_LEVEL]
            ids = index.ids()
            matrix = np.zeros((len(ids), index.dim), dtype=np.float32)
            for row, doc_id in enumerate(ids):
                entry = index.get(doc_id)
                if entry is not None:
                    matrix[row] = entry.vector
            self._object_rows = {doc_id: row for row, doc_id in enumerate(ids)}
            self._object_matrix = matrix
        return [self._object_rows.get(d, -1) for d in doc_ids], self._object_matrix

    def record(self, symbol: str) -> NodeRecord:
        try:
            return self.records[symbol]
        except KeyError:
            raise HierarchicalIndexError(f"no node {symbol!r} in the hierarchical index") from None

    def position(self, symbol: str) -> np.ndarray:
        return self._positions[symbol]

    def floor_levels(self) -> dict[str, int]:
        """Floor symbol -> storey index."""
        return dict(self._floor_levels)

    def rooms_on(self, floor: str) -> list[str]:
        return list(self._rooms_by_floor.get(floor, []))

    def rooms_by_floor(self) -> dict[str, list[str]]:
        """Floor symbol ("" for rooms outside any floor) -> its room symbols."""
        return {f: list(rs) for f, rs in self._rooms_by_floor.items()}

    def room_classes(self) -> list[str]:
        return sorted({r.class_name for r in self.records.values() if r.label == ont.ROOM})

    def colour_words(self) -> frozenset[str]:
        """Every word of the colour names the indexed objects carry ("dark", "grey", "oak", ...)."""
        if self._colour_words is None:
            self._colour_words = frozenset(
                w for r in self.records.values() if r.color for w in r.color.lower().split()
            )
        return self._colour_words

    def object_classes(self) -> list[str]:
        return sorted({r.class_name for r in self.records.values() if r.label in OBJECT_LABELS})

    def sizes(self) -> dict[str, int]:
        """Indexed documents per level (plus visual ones, prefixed ``visual_``)."""
        out = {level: len(self.levels[level]) for level in LEVELS}
        out.update({f"visual_{k}": len(v) for k, v in self.visual.items()})
        return out

    # -- persistence ----------------------------------------------------------------------------------
    def save(self, directory: str | Path) -> Path:
        """Write every level, the records and a manifest to ``directory`` (the manifest last, atomically, so
        a crash never leaves a manifest that names missing files)."""
        target = Path(directory)
        target.mkdir(parents=True, exist_ok=True)
        for level, index in self.levels.items():
            index.save(target / level)
        for level, index in self.visual.items():
            index.save(target / f"visual_{level}")
        _write_json_atomic(target / RECORDS_FILE, {s: r.to_json() for s, r in sorted(self.records.items())})
        manifest = {
            "format": FORMAT_NAME,
            "version": FORMAT_VERSION,
            "fingerprint": self.fingerprint,
            "embedder": self.embedder.name,
            "dim": self.embedder.dim,
            "levels": {level: len(self.levels[level]) for level in LEVELS},
            "visual": sorted(self.visual),
            "visual_encoder": self.visual_encoder.name if self.visual_encoder is not None else None,
            "visual_status": self.visual_status,
        }
        _write_json_atomic(target / MANIFEST_FILE, manifest)
        return target

    @classmethod
    def load(
        cls,
        directory: str | Path,
        embedder: Embedder,
        *,
        visual_encoder: CrossModalEncoder | None = None,
    ) -> HierarchicalIndex:
        """Read an index written by :meth:`save`; its embedder (and visual encoder, for the visual route)
        must be the ones it was built with."""
        source = Path(directory)
        manifest = _read_json(source / MANIFEST_FILE, "hierarchical index manifest")
        if manifest.get("format") != FORMAT_NAME or manifest.get("version") != FORMAT_VERSION:
            raise HierarchicalIndexError(
                f"{source / MANIFEST_FILE}: not a scenerag hierarchical index of version {FORMAT_VERSION}",
                hint="rebuild it (HierarchicalIndex.build / open_or_build)",
            )
        levels = {level: VectorIndex.load(source / level, embedder=embedder) for level in LEVELS}
        raw = _read_json(source / RECORDS_FILE, "hierarchical index records")
        try:
            records = {s: NodeRecord.from_json(d) for s, d in raw.items()}
        except (KeyError, TypeError, ValueError) as exc:
            raise HierarchicalIndexError(
                f"{source / RECORDS_FILE}: malformed node record ({exc!r})", hint="rebuild the index"
            ) from exc
        visual: dict[str, VectorIndex] = {}
        status = str(manifest.get("visual_status") or VISUAL_OFFLINE)
        saved_encoder = manifest.get("visual_encoder")
        if manifest.get("visual"):
            if visual_encoder is not None and visual_encoder.name == saved_encoder:
                visual = {level: VectorIndex.load(source / f"visual_{level}") for level in manifest["visual"]}
            else:
                status = (
                    f"text only: the visual indexes were built with {saved_encoder!r}, which was not given "
                    "at load time"
                )
                visual_encoder = None
        return cls(
            embedder,
            levels,
            records,
            fingerprint=str(manifest.get("fingerprint", "")),
            visual=visual,
            visual_encoder=visual_encoder,
            visual_status=status,
        )

    @classmethod
    def open_or_build(
        cls,
        graph: SceneGraph,
        directory: str | Path,
        embedder: Embedder,
        *,
        visual_encoder: CrossModalEncoder | None = None,
        frame_loader: FrameLoader | None = None,
    ) -> HierarchicalIndex:
        """The index saved in ``directory`` if it was built from this very graph with this embedder, else a
        fresh one (built and saved there)."""
        target = Path(directory)
        if (target / MANIFEST_FILE).is_file():
            try:
                manifest = _read_json(target / MANIFEST_FILE, "hierarchical index manifest")
                fresh = manifest.get("fingerprint") == graph_fingerprint(graph)
                same_visual = manifest.get("visual_encoder") == (
                    visual_encoder.name if visual_encoder is not None else None
                )
                if fresh and same_visual and manifest.get("embedder") == embedder.name:
                    return cls.load(target, embedder, visual_encoder=visual_encoder)
            except SceneRagError:
                pass  # unreadable or stale: rebuild below
        index = cls.build(graph, embedder, visual_encoder=visual_encoder, frame_loader=frame_loader)
        index.save(target)
        return index


def _visual_indexes(
    graph: SceneGraph,
    records: Mapping[str, NodeRecord],
    encoder: CrossModalEncoder,
    frame_loader: FrameLoader,
    batch: int = 16,
) -> dict[str, VectorIndex]:
    """Keyframe images and object crops (best view, mask box) through ``encoder``."""
    keyframes: list[tuple[str, int]] = []
    for node in graph.nodes(ont.KEYFRAME):
        frame = node.attributes.get("frame_index")
        if isinstance(frame, int):
            keyframes.append((node.symbol, frame))
    crops: list[tuple[str, int, list[int]]] = []
    for node in graph.nodes():
        if node.label not in OBJECT_LABELS:
            continue
        frame, box = node.attributes.get("best_view"), node.attributes.get("best_view_bbox")
        if isinstance(frame, int) and isinstance(box, list) and len(box) == 4:
            crops.append((node.symbol, frame, [int(v) for v in box]))
    cache: dict[int, np.ndarray] = {}

    def image(frame: int) -> np.ndarray:
        if frame not in cache:
            if len(cache) > 64:
                cache.clear()
            cache[frame] = np.asarray(frame_loader(frame))
        return cache[frame]

    out: dict[str, VectorIndex] = {}
    for level, items in (
        (KEYFRAME_LEVEL, [(s, lambda f=f: image(f)) for s, f in keyframes]),
        (OBJECT_LEVEL, [(s, lambda f=f, b=b: _crop(image(f), b)) for s, f, b in crops]),
    ):
        vectors: list[np.ndarray] = []
        for start in range(0, len(items), batch):
            chunk = items[start : start + batch]
            vectors.append(np.asarray(encoder.encode([make() for _, make in chunk]), dtype=np.float32))
        dim = vectors[0].shape[1] if vectors else int(np.asarray(encoder.encode_text(["probe"])).shape[1])
        index = VectorIndex(dim, embedder_name=encoder.name)
        if items:
            index.add(
                [s for s, _ in items],
                np.concatenate(vectors),
                [{"symbol": s, "room": records[s].room, "floor": records[s].floor} for s, _ in items],
            )
        out[level] = index
    return out


def _crop(image: np.ndarray, box: Sequence[int], margin: float = 0.1) -> np.ndarray:
    """The ``(x0, y0, x1, y1)`` box of ``image`` widened by ``margin`` of its size (at least 8 px wide)."""
    h, w = image.shape[:2]
    x0, y0, x1, y1 = box
    mx, my = max(2, int((x1 - x0 + 1) * margin)), max(2, int((y1 - y0 + 1) * margin))
    x0, y0 = max(0, x0 - mx), max(0, y0 - my)
    x1, y1 = min(w - 1, max(x1 + mx, x0 + 7)), min(h - 1, max(y1 + my, y0 + 7))
    return np.ascontiguousarray(image[y0 : y1 + 1, x0 : x1 + 1])


# -- retrieval --------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class RetrievalConfig:
    """Top-down retrieval settings.

    ``k_floors``/``k_rooms``: floors and rooms kept when the query names them; ``object_pool``: candidates
    scored per object text; ``k_keyframes``: keyframes per room; ``temperature``: softmax temperature of
    cosine similarities; ``phrase_weight``: weight of the short phrase vs the description of an object;
    ``anchor_sigma_m``: distance (m) that costs one nat of an anchor's log-probability;
    ``anchor_miss_log_p``: log-probability of an anchor absent from the candidate's room;
    ``keyframe_weight``: weight of the best keyframe of a room; ``size_weight``: weight of size words
    ("big", "tall") among candidates of one class; ``floor_confidence``: probability of a floor the query
    names by number; ``visual_weight``/``visual_temperature``: the image-text factor when indexed.
    """

    k_floors: int = 2
    k_rooms: int = 3
    object_pool: int = 64
    k_keyframes: int = 3
    temperature: float = 0.1
    phrase_weight: float = 0.6
    anchor_sigma_m: float = 1.0
    anchor_miss_log_p: float = -7.0
    keyframe_weight: float = 0.5
    size_weight: float = 1.5
    floor_confidence: float = 0.98
    visual_weight: float = 0.5
    visual_temperature: float = 0.02

    def __post_init__(self) -> None:
        for name in ("k_floors", "k_rooms", "object_pool", "k_keyframes"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise HierarchicalIndexError(
                    f"RetrievalConfig.{name} must be a positive integer, got {value!r}"
                )
        for name in ("temperature", "anchor_sigma_m", "visual_temperature"):
            if not getattr(self, name) > 0:
                raise HierarchicalIndexError(f"RetrievalConfig.{name} must be > 0, got {getattr(self, name)}")
        if not 0.0 <= self.phrase_weight <= 1.0:
            raise HierarchicalIndexError(
                f"RetrievalConfig.phrase_weight must be in [0, 1], got {self.phrase_weight}"
            )
        if not 0.0 < self.floor_confidence < 1.0:
            raise HierarchicalIndexError(
                f"RetrievalConfig.floor_confidence must be in (0, 1), got {self.floor_confidence}"
            )


@dataclass(frozen=True, slots=True)
class QueryVectors:
    """Embedded texts of a decomposition: target, anchors, floor, room, and the whole query (keyframes);
    ``visual_*`` are the same texts in the cross-modal encoder's space (None without a visual route)."""

    target: np.ndarray
    anchors: tuple[np.ndarray, ...]
    floor: np.ndarray | None
    room: np.ndarray | None
    scene: np.ndarray
    visual_target: np.ndarray | None = None
    visual_scene: np.ndarray | None = None


@dataclass(frozen=True, slots=True)
class ScoredNode:
    """A retrieved node: ``log_p`` its (joint) log-probability, ``similarity`` its best cosine match."""

    symbol: str
    log_p: float
    similarity: float


@dataclass(frozen=True, slots=True)
class ObjectCandidate:
    """A scored candidate object and the log-factors of its score (``score`` is their sum)."""

    symbol: str
    score: float
    similarity: float
    log_p_floor: float
    log_p_room: float
    log_p_object: float
    log_p_anchors: float
    log_p_keyframe: float
    size_term: float = 0.0
    anchor: str | None = None
    anchor_distance: float | None = None


@dataclass
class RetrievedContext:
    """The result of one top-down retrieval: chosen floors and rooms, ranked objects (best first), the
    anchors' candidates, the keyframes of the chosen rooms, stage timings (ms) and whether images helped."""

    decomposition: QueryDecomposition
    floors: list[ScoredNode]
    rooms: list[ScoredNode]
    objects: list[ObjectCandidate]
    anchors: dict[str, list[ScoredNode]]
    keyframes: list[ScoredNode]
    timings_ms: dict[str, float] = field(default_factory=dict)
    visual_used: bool = False

    @property
    def ranked_symbols(self) -> list[str]:
        return [c.symbol for c in self.objects]

    @property
    def best(self) -> str | None:
        return self.objects[0].symbol if self.objects else None

    @property
    def total_ms(self) -> float:
        return float(sum(self.timings_ms.values()))

    def symbols(self) -> list[str]:
        """Every node symbol of the bundle (floors, rooms, objects, anchors, keyframes), first seen first."""
        seen: dict[str, None] = {}
        for group in (self.floors, self.rooms, self.objects, *self.anchors.values(), self.keyframes):
            for item in group:
                seen.setdefault(item.symbol, None)
        return list(seen)


_SIZE_WORDS: dict[str, tuple[str, float]] = {
    "big": ("volume", 1.0),
    "bigger": ("volume", 1.0),
    "biggest": ("volume", 1.0),
    "large": ("volume", 1.0),
    "larger": ("volume", 1.0),
    "largest": ("volume", 1.0),
    "huge": ("volume", 1.0),
    "small": ("volume", -1.0),
    "smaller": ("volume", -1.0),
    "smallest": ("volume", -1.0),
    "little": ("volume", -1.0),
    "tiny": ("volume", -1.0),
    "tall": ("height", 1.0),
    "taller": ("height", 1.0),
    "tallest": ("height", 1.0),
    "high": ("height", 1.0),
    "short": ("height", -1.0),
    "shorter": ("height", -1.0),
    "shortest": ("height", -1.0),
    "low": ("height", -1.0),
    "wide": ("width", 1.0),
    "wider": ("width", 1.0),
    "widest": ("width", 1.0),
    "long": ("width", 1.0),
    "longer": ("width", 1.0),
    "longest": ("width", 1.0),
    "narrow": ("width", -1.0),
    "narrower": ("width", -1.0),
    "narrowest": ("width", -1.0),
    "thin": ("width", -1.0),
}


_GENERIC_WORDS = frozenset(
    {
        "thing",
        "things",
        "object",
        "objects",
        "item",
        "items",
        "one",
        "ones",
        "stuff",
        "piece",
        "the",
        "a",
        "an",
    }
)


def size_preference(text: str) -> tuple[str, float] | None:
    """``("volume" | "height" | "width", +1 | -1)`` for the first size word of ``text``, else None."""
    for word in re.findall(r"[a-z]+", text.lower()):
        if word in _SIZE_WORDS:
            return _SIZE_WORDS[word]
    return None


def _size_feature(size: tuple[float, float, float] | None, kind: str) -> float | None:
    if size is None:
        return None
    w, d, h = (max(float(v), 1e-3) for v in size)
    if kind == "volume":
        return math.log(w * d * h)
    if kind == "height":
        return math.log(h)
    return math.log(max(w, d))


def _log_softmax(values: np.ndarray, temperature: float) -> np.ndarray:
    if values.size == 0:
        return values
    z = values / temperature
    z = z - z.max()
    return z - math.log(float(np.exp(z).sum()))


class HierarchicalRetriever:
    """Top-down retrieval over a :class:`HierarchicalIndex` (see the module docstring)."""

    def __init__(self, index: HierarchicalIndex, config: RetrievalConfig | None = None) -> None:
        self.index = index
        self.config = config or RetrievalConfig()

    # -- embedding --------------------------------------------------------------------------------------
    def embed(self, decomposition: QueryDecomposition) -> QueryVectors:
        """Embed every text of ``decomposition`` in one batch (the embedder caches repeated texts)."""
        d = decomposition
        texts = [d.target_object, d.query, *d.anchors]
        if d.target_floor:
            texts.append(d.target_floor)
        if d.target_room:
            texts.append(d.target_room)
        unique = list(dict.fromkeys(texts))
        vectors = self.index.embedder.embed(unique)
        row = {t: vectors[i] for i, t in enumerate(unique)}
        visual_target = visual_scene = None
        if self.index.has_visual:
            assert self.index.visual_encoder is not None
            vis = np.asarray(
                self.index.visual_encoder.encode_text([d.target_object, d.query]), dtype=np.float32
            )
            visual_target, visual_scene = vis[0], vis[1]
        return QueryVectors(
            target=row[d.target_object],
            anchors=tuple(row[a] for a in d.anchors),
            floor=row[d.target_floor] if d.target_floor else None,
            room=row[d.target_room] if d.target_room else None,
            scene=row[d.query],
            visual_target=visual_target,
            visual_scene=visual_scene,
        )

    def retrieve(
        self, decomposition: QueryDecomposition, vectors: QueryVectors | None = None
    ) -> RetrievedContext:
        """Retrieve the context of ``decomposition``; ``vectors`` skips embedding (precomputed queries)."""
        timings: dict[str, float] = {}
        started = time.perf_counter()
        if vectors is None:
            vectors = self.embed(decomposition)
            timings["embed"] = (time.perf_counter() - started) * 1000.0
        cfg = self.config
        t = time.perf_counter()
        floor_logp, kept_floors = self._floors(decomposition, vectors)
        timings["floors"] = (time.perf_counter() - t) * 1000.0
        t = time.perf_counter()
        room_logp, kept_rooms = self._rooms(vectors, kept_floors, floor_logp)
        timings["rooms"] = (time.perf_counter() - t) * 1000.0
        t = time.perf_counter()
        scope = self._scope(kept_floors, kept_rooms)
        pool, sims, object_logp = self._objects(vectors.target, vectors.visual_target, scope)
        anchor_pools = [self._objects(vec, None, scope) for vec in vectors.anchors]
        timings["objects"] = (time.perf_counter() - t) * 1000.0
        t = time.perf_counter()
        preliminary = self._joint(decomposition, pool, sims, object_logp, anchor_pools, floor_logp, room_logp)
        leading_rooms: list[str] = list(kept_rooms or [])
        for c in preliminary:
            room = self.index.records[c.symbol].room
            if len(leading_rooms) >= cfg.k_rooms + 2:
                break
            if room and room not in leading_rooms:
                leading_rooms.append(room)
        scoring_ms = (time.perf_counter() - t) * 1000.0
        t = time.perf_counter()
        keyframe_best, keyframes = self._keyframes(vectors, leading_rooms)
        timings["keyframes"] = (time.perf_counter() - t) * 1000.0
        t = time.perf_counter()
        objects = self._with_keyframes(preliminary, keyframe_best)
        rooms = self._rank_rooms(objects, room_logp, floor_logp, kept_rooms)
        context_rooms = {r.symbol for r in rooms[: cfg.k_rooms]}
        shown_floors = set(kept_floors if kept_floors is not None else floor_logp)
        floors = sorted(
            (ScoredNode(f, lp, 0.0) for f, lp in floor_logp.items() if f in shown_floors),
            key=lambda n: -n.log_p,
        )
        anchors = {
            text: [
                ScoredNode(s, float(lp), float(sim))
                for s, sim, lp in sorted(zip(ap[0], ap[1], ap[2], strict=True), key=lambda x: -x[2])
                if self.index.records[s].room in context_rooms
            ][: cfg.k_keyframes * 2]
            for text, ap in zip(decomposition.anchors, anchor_pools, strict=True)
        }
        chosen_keyframes = [k for k in keyframes if self.index.records[k.symbol].room in context_rooms]
        timings["score"] = scoring_ms + (time.perf_counter() - t) * 1000.0
        return RetrievedContext(
            decomposition=decomposition,
            floors=floors,
            rooms=rooms,
            objects=objects,
            anchors=anchors,
            keyframes=chosen_keyframes,
            timings_ms=timings,
            visual_used=vectors.visual_target is not None and bool(self.index.visual),
        )

    # -- levels -------------------------------------------------------------------------------------------
    def _floors(self, d: QueryDecomposition, q: QueryVectors) -> tuple[dict[str, float], list[str] | None]:
        """log P(F|q) of every floor and the top ``k_floors`` floors, or ``({}, None)`` when the query names
        no floor (then rooms are scored jointly over all floors, which is P(F, R|q) itself)."""
        levels = self.index.floor_levels()
        n = len(levels)
        if n == 0:
            return {}, None
        if d.floor_level is not None and d.floor_level in levels.values():
            conf = self.config.floor_confidence
            rest = math.log((1.0 - conf) / (n - 1)) if n > 1 else 0.0
            logp = {f: (math.log(conf) if lv == d.floor_level else rest) for f, lv in levels.items()}
        elif q.floor is not None:
            index = self.index.levels[FLOOR_LEVEL]
            best = self._best_per_node(index, q.floor, None, len(index))
            floors = list(levels)
            sims = np.array([best.get(f, -1.0) for f in floors])
            logp = dict(zip(floors, _log_softmax(sims, self.config.temperature).tolist(), strict=True))
        else:
            return {}, None
        kept = sorted(logp, key=lambda f: (-logp[f], f))[: self.config.k_floors]
        return logp, kept

    def _rooms(
        self, q: QueryVectors, floors: list[str] | None, floor_logp: Mapping[str, float]
    ) -> tuple[dict[str, float], list[str] | None]:
        """log P(R|F,q) of the rooms on the kept floors (a softmax per floor), or log P(R|q) over every room
        when no floor is named, and the top ``k_rooms`` rooms by log P(F|q) + log P(R|F,q); ``({}, None)``
        when the query names no room (no room constraint). Rooms none of whose documents is among the
        best ``max(8 k_rooms, 32)`` get similarity -1."""
        if q.room is None:
            return {}, None
        cfg = self.config
        groups = (
            [self.index.rooms_on(f) for f in floors]
            if floors is not None
            else [[r for rs in self.index.rooms_by_floor().values() for r in rs]]
        )
        flt: FilterSpec | None = None if floors is None else {"floor": {"$in": list(floors)}}
        best = self._best_per_node(self.index.levels[ROOM_LEVEL], q.room, flt, max(8 * cfg.k_rooms, 32))
        logp: dict[str, float] = {}
        for rooms in groups:
            if rooms:
                sims = np.array([best.get(r, -1.0) for r in rooms])
                logp.update(zip(rooms, _log_softmax(sims, cfg.temperature).tolist(), strict=True))
        records = self.index.records
        joint = {r: lp + floor_logp.get(records[r].floor, 0.0) for r, lp in logp.items()}
        kept = sorted(joint, key=lambda r: (-joint[r], r))[: cfg.k_rooms]
        return logp, kept

    def _scope(self, floors: list[str] | None, rooms: list[str] | None) -> FilterSpec | None:
        if rooms is not None:
            return {"room": {"$in": rooms}}
        if floors is not None:
            return {"floor": {"$in": floors}}
        return None

    def _best_per_node(
        self, index: VectorIndex, vector: np.ndarray, flt: FilterSpec | None, k: int
    ) -> dict[str, float]:
        """Best cosine similarity per node symbol among the top ``k`` documents matching ``flt``."""
        hits = index.search(vector, k, filter=flt)
        best: dict[str, float] = {}
        for hit in hits:
            symbol = symbol_of(hit.id)
            if hit.score > best.get(symbol, -2.0):
                best[symbol] = hit.score
        return best

    def _objects(
        self, vector: np.ndarray, visual: np.ndarray | None, scope: FilterSpec | None
    ) -> tuple[list[str], np.ndarray, np.ndarray]:
        """Candidate objects of one object text: symbols, combined cosine similarity, log P(o|R,q).

        One search over both document kinds (the best ``2 x object_pool`` phrase or description documents in
        ``scope``); an object found through one kind gets its other document's similarity looked up."""
        cfg = self.config
        index = self.index.levels[OBJECT_LEVEL]
        components: dict[str, dict[str, float]] = {}
        hits: list[Hit] = index.search(vector, 2 * cfg.object_pool, filter=scope)
        for hit in hits:
            symbol, _, doc = hit.id.partition("#")
            components.setdefault(symbol, {})[doc] = hit.score
        symbols = list(components)
        missing = [
            f"{symbol}#{doc}"
            for symbol, parts in components.items()
            for doc in (DOC_PHRASE, DOC_DESCRIPTION)
            if doc not in parts
        ]
        if missing:
            rows, matrix = self.index.object_document_rows(missing)
            found = [doc_id for doc_id, row in zip(missing, rows, strict=True) if row >= 0]
            if found:
                scores = matrix[[row for row in rows if row >= 0]] @ vector
                for doc_id, score in zip(found, scores.tolist(), strict=True):
                    symbol, _, doc = doc_id.partition("#")
                    components[symbol][doc] = score
        sims = np.empty(len(symbols))
        for i, symbol in enumerate(symbols):
            parts = components[symbol]
            if DOC_DESCRIPTION in parts and DOC_PHRASE in parts:
                sims[i] = (
                    cfg.phrase_weight * parts[DOC_PHRASE] + (1.0 - cfg.phrase_weight) * parts[DOC_DESCRIPTION]
                )
            else:
                sims[i] = parts.get(DOC_PHRASE, parts.get(DOC_DESCRIPTION, -1.0))
        if len(symbols) > cfg.object_pool:
            keep = np.sort(np.argsort(-sims, kind="stable")[: cfg.object_pool])
            symbols, sims = [symbols[i] for i in keep.tolist()], sims[keep]
        logp = _log_softmax(sims, cfg.temperature)
        if visual is not None and OBJECT_LEVEL in self.index.visual and symbols:
            vis_index = self.index.visual[OBJECT_LEVEL]
            vis = np.array(
                [float(e.vector @ visual) if (e := vis_index.get(s)) is not None else -1.0 for s in symbols]
            )
            logp = logp + cfg.visual_weight * _log_softmax(vis, cfg.visual_temperature)
        return symbols, sims, logp

    def _keyframes(self, q: QueryVectors, rooms: list[str]) -> tuple[dict[str, float], list[ScoredNode]]:
        """Best log P(s|R,q) per room and the top keyframes per room, best first."""
        index = self.index.levels[KEYFRAME_LEVEL]
        if not rooms or len(index) == 0:
            return {}, []
        cfg = self.config
        hits = index.search(q.scene, cfg.k_keyframes * 2 * len(rooms), filter={"room": {"$in": rooms}})
        if not hits:
            return {}, []
        symbols = [h.id for h in hits]
        sims = np.array([h.score for h in hits])
        logp = _log_softmax(sims, cfg.temperature)
        if q.visual_scene is not None and KEYFRAME_LEVEL in self.index.visual:
            vis_index = self.index.visual[KEYFRAME_LEVEL]
            vis = np.array(
                [
                    float(e.vector @ q.visual_scene) if (e := vis_index.get(s)) is not None else -1.0
                    for s in symbols
                ]
            )
            logp = logp + cfg.visual_weight * _log_softmax(vis, cfg.visual_temperature)
        best: dict[str, float] = {}
        per_room: dict[str, int] = {}
        chosen: list[ScoredNode] = []
        for i in np.argsort(-logp):
            symbol = symbols[int(i)]
            room = self.index.records[symbol].room
            best.setdefault(room, float(logp[i]))
            if per_room.get(room, 0) < cfg.k_keyframes:
                per_room[room] = per_room.get(room, 0) + 1
                chosen.append(ScoredNode(symbol, float(logp[i]), float(sims[i])))
        return best, chosen

    def _joint(
        self,
        d: QueryDecomposition,
        pool: list[str],
        sims: np.ndarray,
        object_logp: np.ndarray,
        anchor_pools: list[tuple[list[str], np.ndarray, np.ndarray]],
        floor_logp: Mapping[str, float],
        room_logp: Mapping[str, float],
    ) -> list[ObjectCandidate]:
        """Score every candidate by the sum of its log-factors except the keyframe one; best first."""
        cfg = self.config
        records = self.index.records
        miss_floor = min(floor_logp.values()) if floor_logp else 0.0
        miss_room = min(room_logp.values()) if room_logp else 0.0
        n = len(pool)
        positions = np.array([self.index.position(s) for s in pool]).reshape(n, 3)
        room_ids: dict[str, int] = {}
        rooms = np.array([room_ids.setdefault(records[s].room, len(room_ids)) for s in pool], dtype=np.int64)
        pool_ids = {s: i for i, s in enumerate(pool)}
        anchor_terms = np.zeros(n)
        nearest: list[str | None] = [None] * n
        nearest_d: list[float | None] = [None] * n
        for j, (symbols, _, logp) in enumerate(anchor_pools):
            if not symbols:
                anchor_terms += cfg.anchor_miss_log_p
                continue
            m = len(symbols)
            a_pos = np.array([self.index.position(s) for s in symbols]).reshape(m, 3)
            a_rooms = np.array([room_ids.get(records[s].room, -1) for s in symbols], dtype=np.int64)
            a_self = np.array([pool_ids.get(s, -1) for s in symbols], dtype=np.int64)
            dist = np.sqrt(((positions[:, None, :] - a_pos[None, :, :]) ** 2).sum(axis=2))
            valid = (rooms[:, None] == a_rooms[None, :]) & (np.arange(n)[:, None] != a_self[None, :])
            terms = np.where(valid, logp[None, :] - dist / cfg.anchor_sigma_m, -np.inf)
            best = terms.argmax(axis=1)
            best_terms = terms[np.arange(n), best]
            found = best_terms > cfg.anchor_miss_log_p
            anchor_terms += np.where(found, best_terms, cfg.anchor_miss_log_p)
            if j == 0:
                for i in np.flatnonzero(found).tolist():
                    nearest[i], nearest_d[i] = symbols[int(best[i])], float(dist[i, best[i]])
        size_terms = self._size_terms(d.target_object, pool, sims)
        out: list[ObjectCandidate] = []
        for i, symbol in enumerate(pool):
            rec = records[symbol]
            lp_floor = floor_logp.get(rec.floor, miss_floor) if floor_logp else 0.0
            lp_room = room_logp.get(rec.room, miss_room) if room_logp else 0.0
            lp_anchor = float(anchor_terms[i])
            size = size_terms.get(symbol, 0.0)
            score = lp_floor + lp_room + float(object_logp[i]) + lp_anchor + size
            out.append(
                ObjectCandidate(
                    symbol,
                    score,
                    float(sims[i]),
                    lp_floor,
                    lp_room,
                    float(object_logp[i]),
                    lp_anchor,
                    0.0,
                    size,
                    nearest[i],
                    nearest_d[i],
                )
            )
        out.sort(key=lambda c: (-c.score, c.symbol))
        return out

    def _with_keyframes(
        self, candidates: list[ObjectCandidate], keyframe_best: Mapping[str, float]
    ) -> list[ObjectCandidate]:
        """Add ``keyframe_weight`` x the best keyframe log-probability of each candidate's room (rooms whose
        keyframes were not searched or not retrieved get the lowest retrieved value); best first."""
        if not keyframe_best:
            return candidates
        floor_value = min(keyframe_best.values())
        weight = self.config.keyframe_weight
        out = []
        for c in candidates:
            lp = weight * keyframe_best.get(self.index.records[c.symbol].room, floor_value)
            out.append(
                ObjectCandidate(
                    c.symbol,
                    c.score + lp,
                    c.similarity,
                    c.log_p_floor,
                    c.log_p_room,
                    c.log_p_object,
                    c.log_p_anchors,
                    lp,
                    c.size_term,
                    c.anchor,
                    c.anchor_distance,
                )
            )
        out.sort(key=lambda c: (-c.score, c.symbol))
        return out

    def _size_terms(self, target: str, pool: list[str], sims: np.ndarray) -> dict[str, float]:
        """Size words ("big", "tallest"): a standardised size feature times ``size_weight`` among the
        candidates one room holds of each class that matches the target well (similarity within 0.05 of
        the best) — or among all of a room's candidates when the target names no class ("the biggest
        thing")."""
        pref = size_preference(target)
        if pref is None or not pool:
            return {}
        kind, sign = pref
        generic = self._is_generic(target)
        groups: dict[tuple[str, str], list[int]] = {}
        for i, s in enumerate(pool):
            rec = self.index.records[s]
            groups.setdefault((rec.room, "" if generic else rec.class_name), []).append(i)
        best = float(sims.max())
        out: dict[str, float] = {}
        for members in groups.values():
            if len(members) < 2 or (not generic and max(float(sims[i]) for i in members) < best - 0.05):
                continue
            feats = {i: _size_feature(self.index.records[pool[i]].size, kind) for i in members}
            values = np.array([v for v in feats.values() if v is not None])
            if len(values) < 2 or float(values.std()) < 1e-9:
                continue
            mean, std = float(values.mean()), float(values.std())
            for i, v in feats.items():
                if v is not None:
                    out[pool[i]] = self.config.size_weight * sign * (v - mean) / std
        return out

    def _is_generic(self, target: str) -> bool:
        """True when ``target`` names no kind of thing: only size, colour and generic words ("the big red
        one", "smallest item")."""
        colours = self.index.colour_words()
        words = [w for w in re.findall(r"[a-z]+", target.lower()) if w not in _SIZE_WORDS]
        return all(w in _GENERIC_WORDS or w in colours for w in words)

    def _rank_rooms(
        self,
        objects: list[ObjectCandidate],
        room_logp: Mapping[str, float],
        floor_logp: Mapping[str, float],
        kept: list[str] | None,
    ) -> list[ScoredNode]:
        """Rooms by their best candidate's score; kept rooms without candidates follow by their prior."""
        best: dict[str, ScoredNode] = {}
        for c in objects:
            room = self.index.records[c.symbol].room
            if room and room not in best:
                best[room] = ScoredNode(room, c.score, c.similarity)
        ranked = sorted(best.values(), key=lambda n: -n.log_p)
        for room in kept or []:
            if room not in best:
                prior = room_logp.get(room, 0.0) + floor_logp.get(self.index.records[room].floor, 0.0)
                ranked.append(ScoredNode(room, prior + self.config.anchor_miss_log_p, 0.0))
        return ranked


# -- io helpers -------------------------------------------------------------------------------------------
def _read_json(path: Path, what: str) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise HierarchicalIndexError(f"{path}: no {what} here", hint="build the index first") from None
    except (OSError, ValueError) as exc:
        raise HierarchicalIndexError(
            f"{path}: cannot read the {what}: {exc}", hint="rebuild the index"
        ) from exc
    if not isinstance(data, dict):
        raise HierarchicalIndexError(f"{path}: the {what} is not a JSON object", hint="rebuild the index")
    return data


def _write_json_atomic(path: Path, document: Any) -> None:
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(document, handle, separators=(",", ":"))
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


__all__ = [
    "INDEX_DIRNAME",
    "LEVELS",
    "VISUAL_OFFLINE",
    "CrossModalEncoder",
    "FrameLoader",
    "HierarchicalIndex",
    "HierarchicalIndexError",
    "HierarchicalRetriever",
    "NodeRecord",
    "ObjectCandidate",
    "QueryDecomposition",
    "QueryVectors",
    "RetrievalConfig",
    "RetrievedContext",
    "RuleBasedDecomposer",
    "ScoredNode",
    "clip_cross_modal_encoder",
    "floor_aliases",
    "graph_fingerprint",
    "index_dir",
    "ordinal_word",
    "parse_floor_level",
    "sequence_frame_loader",
    "size_preference",
]
