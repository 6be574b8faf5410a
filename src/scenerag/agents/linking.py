"""Entity linking: map the words of a question to values the database holds, before any query is written.

A mention links to a listed property value (``'wastebin'`` -> ``Object.class = 'trash'``, ``'lounge'`` ->
``Room.class = 'lounge'``) or to a node symbol (``'object 79'`` -> ``O79``). Matching, in order: the value
itself or its plural; the lexicon of everyday object words (data files of :mod:`scenerag.agents.words`, extendable); one
typing slip of a value or lexicon word (a letter left out or doubled, two letters swapped: ``'bicyle'``); embedding
similarity of the word to the values (when an embedder is given). Symbols are checked against the store.
The links go into the prompt ("'wastebin' is Object class 'trash'") and mask the question for example
retrieval, so retrieval matches the question's *shape*, not its nouns.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from scenerag.agents.grounding import symbol_spellings
from scenerag.agents.words import Words, load_words
from scenerag.graph import ontology as ont
from scenerag.store.base import GraphStore
from scenerag.store.schema import GraphSchema

if TYPE_CHECKING:
    from scenerag.retrieval.embeddings import Embedder

__all__ = ["EntityLinker", "Link", "word_forms"]

_MAX_CLASSES = 2000  # distinct classes read per label for linking
_SMALL_LABEL = 200  # labels with at most this many nodes: class members and node names are read

_WORD = re.compile(r"[a-z][a-z_-]*")
_SYMBOL = re.compile(r"\b([A-Za-z])(\d+)\b")


@dataclass(frozen=True)
class Link:
    """One mention in the question and what it refers to in the database."""

    mention: str
    label: str
    key: str  # ``class`` (or another listed property) or ``nodeSymbol``
    value: str
    how: str  # exact, lexicon, spelling, embedding, symbol
    symbols: tuple[str, ...] = ()  # nodes with that value (for rooms and other small sets)
    seen: bool = True  # False: a class the perception can name that no node has
    #: other mentions of the question linked to the same value ("cabinets and shelves": both storage)
    also: tuple[str, ...] = ()

    @property
    def mentions(self) -> tuple[str, ...]:
        return (self.mention, *self.also)

    def describe(self, *, symbols: bool = True) -> str:
        """``'wastebin' is Object class 'trash'`` for the prompt (``symbols``: with the nodes of a small class)."""
        said = ", ".join(repr(m) for m in self.mentions)
        verb = "are" if self.also else "is"
        if self.key == ont.SYMBOL_KEY:
            return f"{said} {verb} {self.label} {self.value}"
        if not self.seen:
            return f"{said} {verb} {self.label} {self.key} '{self.value}' (none in this graph)"
        nodes = f" ({', '.join(self.symbols)})" if symbols and self.symbols and len(self.symbols) <= 6 else ""
        return f"{said} {verb} {self.label} {self.key} '{self.value}'{nodes}"


@dataclass
class _Vocabulary:
    values: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # value -> [(label, key)]
    prefixes: dict[str, str] = field(default_factory=dict)  # symbol letter -> label
    members: dict[tuple[str, str, str], tuple[str, ...]] = field(default_factory=dict)
    #: numbered node names ("bathroom 2", "floor 1") -> (label, symbol)
    names: dict[str, tuple[str, str]] = field(default_factory=dict)
    #: label names as words ("floor", "functional_element"): they name a layer, never a property value
    label_words: set[str] = field(default_factory=set)
    #: floor symbols from the lowest level up (where the graph has a Floor layer with levels)
    floors: list[str] = field(default_factory=list)
    #: classes the perception can name that no node has (from the store's labelspace)
    unseen: set[str] = field(default_factory=set)


class EntityLinker:
    """Links question words to the values and symbols of one store's graph (call :meth:`link`).

    ``words``: the language's words and class lexicon (:func:`~scenerag.agents.words.load_words`);
    ``lexicon`` extends/overrides its lexicon; ``embedder`` (optional) links words no rule knows when
    their cosine similarity to a value is at least ``min_similarity`` and beats the runner-up by
    ``min_margin`` (MiniLM puts "door" at 0.58 from "hallway" and "stairs" at 0.62: lower thresholds link
    things the graph does not hold).
    """

    def __init__(
        self,
        store: GraphStore,
        *,
        embedder: Embedder | None = None,
        lexicon: Mapping[str, Sequence[str]] | None = None,
        words: Words | None = None,
        min_similarity: float = 0.66,
        min_margin: float = 0.1,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.words = words or load_words()
        self.lexicon = {**self.words.lexicon, **{k.lower(): tuple(v) for k, v in (lexicon or {}).items()}}
        self.min_similarity = min_similarity
        self.min_margin = min_margin
        self._vocab: _Vocabulary | None = None
        self._value_vectors: tuple[list[str], object] | None = None

    # -- vocabulary ------------------------------------------------------------------------------------
    def vocabulary(self) -> _Vocabulary:
        if self._vocab is None:
            self._vocab = build_vocabulary(self.store)
        return self._vocab

    def singletons(self) -> dict[str, str]:
        """Classes with exactly one node, each with that node's symbol (``{'bicycle': 'O43'}``)."""
        return {
            value: members[0]
            for (_, key, value), members in self.vocabulary().members.items()
            if key == ont.CLASS_KEY and len(members) == 1
        }

    def class_of(self, symbol: str) -> str | None:
        """The class of the node ``symbol`` (small labels only: their classes list their members)."""
        for (_, key, value), members in self.vocabulary().members.items():
            if key == ont.CLASS_KEY and symbol in members:
                return value
        return None

    def kind_of(self, literal: str) -> tuple[str, str] | None:
        """What a query's string literal names, as (label, key): a node symbol's label, else the property
        holding that value (a class first); None when the graph holds no such value."""
        vocab = self.vocabulary()
        if ont.has_symbol_shape(literal) and literal[0] in vocab.prefixes:
            return vocab.prefixes[literal[0]], ont.SYMBOL_KEY
        owners = _class_first(vocab.values.get(literal) or vocab.values.get(literal.lower()) or [])
        return owners[0] if owners else None

    def _value_links(self, value: str, mention: str, how: str) -> list[Link]:
        """Links of ``mention`` to ``value``; where the value is some label's class, only those (a sofa is
        an Object class, not the parent_class of its handles)."""
        vocab = self.vocabulary()
        return [
            Link(
                mention,
                label,
                key,
                value,
                how,
                vocab.members.get((label, key, value), ()),
                seen=value not in vocab.unseen,
            )
            for label, key in _class_first(vocab.values.get(value, []))
        ]

    # -- linking ---------------------------------------------------------------------------------------
    def link(self, question: str) -> list[Link]:
        """Links of ``question``'s mentions, in question order, one per (mention, value)."""
        vocab = self.vocabulary()
        links: list[Link] = []
        taken: list[tuple[int, int]] = []
        for m in self._spelled().finditer(question):
            sym = self._spelled_symbol(m.group(1).lower(), m.group(2))
            if sym is not None:
                links.append(
                    Link(m.group(0), vocab.prefixes.get(sym[0], "node"), ont.SYMBOL_KEY, sym, "symbol")
                )
                taken.append(m.span())
        for m in _SYMBOL.finditer(question):
            if any(a <= m.start() < b for a, b in taken):
                continue
            sym = self._known_symbol(m.group(0))
            if sym is not None:
                links.append(
                    Link(m.group(0), vocab.prefixes.get(sym[0], "node"), ont.SYMBOL_KEY, sym, "symbol")
                )
                taken.append(m.span())
        lowered = question.lower()
        named = {**_floor_words(vocab.floors, self.words), **{k: v[1] for k, v in vocab.names.items()}}
        for phrase in sorted(named, key=len, reverse=True):  # "bathroom 2", "upstairs", "ground floor"
            for m in re.finditer(rf"\b{re.escape(phrase)}\b", lowered):
                if not any(a <= m.start() < b or a < m.end() <= b for a, b in taken):
                    sym = named[phrase]
                    links.append(
                        Link(
                            question[m.start() : m.end()],
                            vocab.prefixes.get(sym[0], "node"),
                            ont.SYMBOL_KEY,
                            sym,
                            "name",
                        )
                    )
                    taken.append(m.span())
        words = [(w.group(0), w.start()) for w in _WORD.finditer(lowered)]
        unmatched: list[str] = []
        i = 0
        while i < len(words):
            word, start = words[i]
            if any(a <= start < b for a, b in taken):
                i += 1
                continue
            # two-word values first ("living room", "trash can"), then the word
            pair = f"{word} {words[i + 1][0]}" if i + 1 < len(words) else ""
            if pair in self.words.not_entities:
                i += 2
                continue
            found = self._match(pair.replace(" ", "_")) or self._match(pair) if pair else []
            if found:
                links.extend(replace(f, mention=pair) for f in found)
                i += 2
                continue
            found = self._match(word)
            if found:
                links.extend(replace(f, mention=word) for f in found)
            elif (
                word not in self.words.stop
                and len(word) > 2
                and not set(self.words.word_forms(word)) & vocab.label_words
            ):
                unmatched.append(word)
            i += 1
        if self.embedder is not None and unmatched:
            links.extend(self._embedding_links(unmatched))
        return _without_restated_classes(_dedupe(links), lowered)

    def _spelled(self) -> re.Pattern[str]:
        """A layer word and a number ("object 79", "mesh place 59110"), the layer words of the language."""
        words = sorted(self.words.layer_words, key=len, reverse=True)
        names = "|".join(re.escape(w) for w in words) or "(?!)"
        return re.compile(rf"\b({names})\s*(?:#|number\s*)?(\d+)\b", re.I)

    def _spelled_symbol(self, word: str, number: str) -> str | None:
        """The symbol of the node a layer word and number name (the first of the word's layers holding it)."""
        vocab = self.vocabulary()
        labels = self.words.layer_words.get(word, ())
        letters = [p for p, label in vocab.prefixes.items() if not labels or label in labels]
        for letter in letters:
            sym = self._known_symbol(f"{letter}{number}")
            if sym is not None:
                return sym
        return None

    def _match(self, word: str) -> list[Link]:
        stop = self.words.stop
        if not word or word in stop or word.rstrip("s") in stop:
            return []  # "objects", "room": generic words, even where a class has that name
        vocab = self.vocabulary()
        if any(form in vocab.label_words for form in self.words.word_forms(word)):
            return []  # "floor" names the Floor layer, not Object.mount = 'floor'
        for form in self.words.word_forms(word):
            if form in vocab.values:
                return self._value_links(form, word, "exact")
        for form in self.words.word_forms(word):
            for target in self.lexicon.get(form, ()):
                if target in vocab.values:
                    return self._value_links(target, word, "lexicon")
        if len(word) >= _MIN_TYPO_LENGTH and " " not in word:
            near = {v for v in vocab.values if one_slip(word, v)}
            near |= {
                t for k, ts in self.lexicon.items() if one_slip(word, k) for t in ts if t in vocab.values
            }
            if len(near) == 1:  # a misspelt value ("bicyle"); two candidates: no guess
                return self._value_links(near.pop(), word, "spelling")
        return self._absent_links(word)

    def _absent_links(self, word: str) -> list[Link]:
        """A lexicon word none of whose classes the graph holds ("kitchen" in a graph without one): linked to
        its first class, as none in this graph, on the region layer for a region class and else on the
        object layer (nothing where the graph has no such layer with classes)."""
        classes = next((self.lexicon[f] for f in self.words.word_forms(word) if f in self.lexicon), ())
        if not classes:
            return []
        label = ont.ROOM if classes[0] in self.words.region_classes else ont.OBJECT
        if ont.CLASS_KEY not in self.store.schema().node_properties.get(label, {}):
            return []
        return [Link(word, label, ont.CLASS_KEY, classes[0], "lexicon", (), seen=False)]

    def _embedding_links(self, words: list[str]) -> list[Link]:
        import numpy as np

        vocab = self.vocabulary()
        if self._value_vectors is None:
            names = sorted(vocab.values)
            vectors = self.embedder.embed([n.replace("_", " ") for n in names]) if names else None  # type: ignore[union-attr]
            self._value_vectors = (names, vectors)
        names, vectors = self._value_vectors
        if not names:
            return []
        wvec = self.embedder.embed(words)  # type: ignore[union-attr]
        sims = wvec @ np.asarray(vectors).T
        out: list[Link] = []
        for word, row in zip(words, sims, strict=True):
            order = np.argsort(-row)
            best = int(order[0])
            margin = float(row[best] - row[order[1]]) if len(order) > 1 else 1.0
            if row[best] >= self.min_similarity and margin >= self.min_margin:
                out.extend(self._value_links(names[best], word, "embedding"))
        return out

    def _known_symbol(self, symbol: str) -> str | None:
        rows = self.store.query(
            "MATCH (n) WHERE n.nodeSymbol IN $s RETURN n.nodeSymbol AS s LIMIT 1",
            {"s": symbol_spellings(symbol)},
        ).rows
        return str(rows[0]["s"]) if rows else None


_MIN_TYPO_LENGTH = 6  # shorter words are too often another real word one letter away


def one_slip(word: str, value: str) -> bool:
    """Whether ``word`` is ``value`` typed with one letter left out, one letter too many, or two neighbouring
    letters swapped (not a changed letter: "table"/"cable" are both words). Both at least six letters."""
    a, b = word.lower(), value.lower()
    if a == b or min(len(a), len(b)) < _MIN_TYPO_LENGTH - 1 or max(len(a), len(b)) < _MIN_TYPO_LENGTH:
        return False
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        return (
            len(diff) == 2
            and diff[1] == diff[0] + 1
            and a[diff[0]] == b[diff[1]]
            and a[diff[1]] == b[diff[0]]
        )
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    if len(long_) - len(short) != 1:
        return False
    i = next((k for k in range(len(short)) if short[k] != long_[k]), len(short))
    return short[i:] == long_[i + 1 :]


def mask_question(question: str, links: Iterable[Link]) -> str:
    """``question`` with each linked mention replaced by its kind ("Which [seating] are in [room R1]?"
    style), so similar questions about other things look alike to the example retriever."""
    out = question
    said = [(mention, link) for link in links for mention in link.mentions]
    for mention, link in sorted(said, key=lambda pair: -len(pair[0])):
        tag = (
            f"[{link.label.lower()}]" if link.key == ont.SYMBOL_KEY else f"[{link.label.lower()} {link.key}]"
        )
        out = re.sub(rf"(?i)\b{re.escape(mention)}\b", tag, out)
    return out


def build_vocabulary(store: GraphStore) -> _Vocabulary:
    """Listed values of every label (from the schema; classes from the store where the schema has too many
    to list), class members and numbered names of small labels, the symbol letter of every label, floors
    by level, and the classes of the store's labelspace that no node has (``unseen``; layout words such as
    "floor" left out). A class that only repeats its label (``MeshPlace.class = 'mesh_place'``, ``Object.class =
    'object'``) says nothing and is left out: linking it would demand a pointless filter."""
    schema: GraphSchema = store.schema()
    vocab = _Vocabulary()
    for label, props in schema.node_properties.items():
        for key, info in props.items():
            for value in info.values or ():
                _add_value(vocab, label, key, value)
    for label in schema.labels:
        vocab.label_words.add(ont.layer_name(label))
        rows = store.query(f"MATCH (n:`{label}`) RETURN n.nodeSymbol AS s LIMIT 1").rows
        if rows and rows[0].get("s"):
            vocab.prefixes.setdefault(str(rows[0]["s"])[0], label)
        small = schema.node_counts.get(label, 0) <= _SMALL_LABEL
        info = schema.node_properties.get(label, {}).get(ont.CLASS_KEY)
        classes: list[object] = []
        if info is not None and small:
            grouped = store.query(
                f"MATCH (n:`{label}`) RETURN n.class AS c, collect(n.nodeSymbol) AS s", max_rows=_SMALL_LABEL
            ).rows
            for row in grouped:
                if row.get("c") is not None:
                    vocab.members[(label, ont.CLASS_KEY, str(row["c"]))] = tuple(sorted(map(str, row["s"])))
            classes = [row.get("c") for row in grouped]
        elif info is not None and info.values is None:
            query = f"MATCH (n:`{label}`) RETURN DISTINCT n.class AS c"
            classes = [row.get("c") for row in store.query(query, max_rows=_MAX_CLASSES).rows]
        if info is not None and info.values is None:  # too many classes for the schema text
            for value in classes:
                if isinstance(value, str):
                    _add_value(vocab, label, ont.CLASS_KEY, value)
        if info is not None:  # classes the perception can name but saw nowhere: "plants" is 'flora', none
            known = getattr(store, "known_classes", dict)().get(label, ())
            for value in known:
                if value not in ont.BACKGROUND_CLASSES and value.lower() not in vocab.values:
                    _add_value(vocab, label, ont.CLASS_KEY, value)
                    vocab.members[(label, ont.CLASS_KEY, value)] = ()
                    vocab.unseen.add(value)
        if small and "name" in schema.node_properties.get(label, {}):
            for row in store.query(
                f"MATCH (n:`{label}`) WHERE n.name IS NOT NULL RETURN n.name AS name, n.nodeSymbol AS s",
                max_rows=_SMALL_LABEL,
            ).rows:
                if isinstance(row.get("name"), str) and row.get("s") and re.search(r"\d", row["name"]):
                    vocab.names[row["name"].lower()] = (label, str(row["s"]))
    if "level" in schema.node_properties.get(ont.FLOOR, {}):
        rows = store.query(
            f"MATCH (f:{ont.FLOOR}) RETURN f.nodeSymbol AS s ORDER BY f.level, s", max_rows=_SMALL_LABEL
        ).rows
        vocab.floors = [str(r["s"]) for r in rows if r.get("s")]
    return vocab


def _class_first(owners: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The (label, key) owners of a value that hold it as a class, or all of them where none does."""
    return [(label, key) for label, key in owners if key == ont.CLASS_KEY] or owners


def _add_value(vocab: _Vocabulary, label: str, key: str, value: str) -> None:
    """``value`` of ``label.key`` as written and lower-cased, unless it only repeats the label's name."""
    plain = ont.layer_name(label)
    if value.lower() in (plain, plain.replace("_", "")):
        return
    for form in dict.fromkeys((value.lower(), value)):
        vocab.values.setdefault(form, []).append((label, key))


def _floor_words(floors: Sequence[str], words: Words) -> dict[str, str]:
    """Everyday names of floors (the language's ``floors`` words) -> floor symbol, US numbering ("first floor"
    is the lowest); the words for one of two floors only where a building has two."""
    if not floors:
        return {}
    names = words.floors
    out = {w: floors[0] for w in names.get("lowest", ())}
    out.update({w: floors[-1] for w in names.get("highest", ())})
    for i, ordinal in enumerate(names.get("ordinals", ())[: len(floors)]):
        out[f"{ordinal} floor"] = floors[i]
    if len(floors) == 2:
        out.update({w: floors[1] for w in names.get("upper_of_two", ())})
        out.update({w: floors[0] for w in names.get("lower_of_two", ())})
    return out


def word_forms(word: str, words: Words | None = None) -> list[str]:
    """The word and its singular candidates (chairs -> chair, boxes -> box, shelves -> shelf) by the endings
    of ``words``' language (default English)."""
    return (words or load_words()).word_forms(word)


def _without_restated_classes(links: list[Link], lowered: str) -> list[Link]:
    """Drops a class link that only restates the kind of a symbol next to it ("hallway R2", "seat O89", "trash
    can O79"): the symbol says which node; the class would invite matching all of them."""
    named = [link for link in links if link.key == ont.SYMBOL_KEY]
    out = []
    for link in links:
        restated = link.key != ont.SYMBOL_KEY and any(_restates(link, sym, lowered) for sym in named)
        if not restated:
            out.append(link)
    return out


def _restates(link: Link, sym: Link, lowered: str) -> bool:
    """Whether class ``link`` is said right next to symbol ``sym`` and names its kind ("hallway R2", "O89, the
    seat"; "trash can O79" with one more word where the symbol is a listed member of the class)."""
    cls, name = re.escape(link.mention.lower()), re.escape(sym.mention.lower())
    member = sym.value in link.symbols
    kind = member or (sym.label == link.label and not link.symbols)  # large classes list no members
    if kind and re.search(rf"\b{cls}\s+{name}\b|\b{name}\s+(?:the\s+)?{cls}\b", lowered):
        return True
    return member and re.search(rf"\b{cls}\s+\w+\s+{name}\b", lowered) is not None


def _dedupe(links: list[Link]) -> list[Link]:
    """One link per (label, key, value); the mentions of the later ones are kept as ``also``."""
    first: dict[tuple[str, str, str], int] = {}
    out: list[Link] = []
    for link in links:
        key = (link.label, link.key, link.value)
        if key not in first:
            first[key] = len(out)
            out.append(link)
        elif link.mention.lower() not in (m.lower() for m in out[first[key]].mentions):
            kept = out[first[key]]
            out[first[key]] = replace(kept, also=(*kept.also, link.mention))
    return out
