"""The words of a language the agents read questions with, loaded from data files (``agents/words/``).

Code in :mod:`scenerag.agents` holds no English and no class names of any graph: question words, stop
words, the words that name each ontology layer and everyday synonyms of classes live in YAML files —
``<lang>.yaml`` for the language, ``examples-<lang>.yaml`` for its worked question -> Cypher templates,
``lexicon-<lang>.yaml`` for class synonyms of common indoor label spaces — and a graph or deployment adds its
own lexicon files (:func:`load_words`'s ``extra``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scenerag.errors import SceneRagError

__all__ = ["Words", "WordsError", "load_words"]

WORDS_DIR = Path(__file__).with_name("words")


class WordsError(SceneRagError):
    """A words file that cannot be read: names the file and the key."""


def _flat(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if not isinstance(value, (list, tuple)):  # YAML reads an unquoted yes/no/on as a boolean
        raise WordsError(f"expected words, got {value!r} (quote words such as 'yes', 'no', 'on' in YAML)")
    out: list[str] = []
    for v in value:
        out.extend(_flat(v))
    return out


@dataclass(frozen=True)
class Words:
    """One language's words (lower-case)."""

    lexicon: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: lexicon classes that name a region (a room's kind), so a class the graph lacks is still linked to the
    #: right layer ("kitchen": no Room is one)
    region_classes: tuple[str, ...] = ()
    stop: frozenset[str] = frozenset()
    not_entities: frozenset[str] = frozenset()
    which: tuple[str, ...] = ()
    yes_no_starts: tuple[str, ...] = ()
    asks_more: tuple[str, ...] = ()
    order_words: tuple[str, ...] = ()
    pair_words: tuple[str, ...] = ()
    #: an instruction that says one of ``choice_words`` and none of ``every_words`` asks for any one member of a
    #: class it names in the plural ("pick up one of the boxes"), not for every one
    choice_words: tuple[str, ...] = ()
    every_words: tuple[str, ...] = ()
    #: an instruction saying these asks for its goals in turn, all of them; alternative_words offer a choice
    sequence_words: tuple[str, ...] = ()
    alternative_words: tuple[str, ...] = ()
    position_words: tuple[str, ...] = ()
    #: right after a question word, words asking for a node's class ("what *kind* of object")
    kind_words: tuple[str, ...] = ()
    #: words asking for a count of the nodes named right after them ("how many objects")
    count_words: tuple[str, ...] = ()
    #: words ranking nodes by a distance ("the closest chair"): a query for them measures one
    distance_superlatives: tuple[str, ...] = ()
    #: comparatives of a distance ("closer to the bike"): what follows one is what another node is measured from
    distance_comparatives: tuple[str, ...] = ()
    #: comparatives asking for the larger value of a measure ("higher", "farther", "more") or the smaller
    #: ("lower", "closer", "fewer"): a compare form's answer goes the way the question's words go
    larger_words: tuple[str, ...] = ()
    smaller_words: tuple[str, ...] = ()
    #: a goal sketch's class the instruction goes on to describe: the description starts with one of
    #: ``description_openers`` right after the class ("the chairs *in* the hallway next to the lounge") and
    #: ends at punctuation or one of ``clause_words`` ("..., *then* stay there")
    description_openers: tuple[str, ...] = ()
    #: words for a direct connection between two nodes of one layer ("border", "walk straight into")
    connection_words: tuple[str, ...] = ()
    #: words asking what lies on the way between two named nodes ("which room do I *pass through*")
    via_words: tuple[str, ...] = ()
    #: words for being next to something: between two nodes of a layer with same-layer edges ("the hallway
    #: next to the lounge") they mean that edge, as ``connection_words`` do
    nearness_words: tuple[str, ...] = ()
    #: words before the start of a route ("*from* the lounge to R3"): an ordered path begins at that node
    source_words: tuple[str, ...] = ()
    #: a question saying one of these asks about what is not so ("objects that didn't get a room")
    negation_words: tuple[str, ...] = ()
    #: words negating the word right after them ("has *no* connection"); alone ("yes or no") they do not
    determiner_negations: tuple[str, ...] = ()
    #: words besides ``negation_words`` that may ask for a pattern not to hold ("no", "other", "except")
    exclusion_words: tuple[str, ...] = ()
    clause_words: tuple[str, ...] = ()
    #: pronouns that refer back to a node named before ("stay in hallway R2 and avoid the bins in *it*")
    antecedent_pronouns: tuple[str, ...] = ()
    #: words leading to a destination ("over to P12"): a description ends there only when its atom has one
    destination_words: tuple[str, ...] = ()
    #: words between the parts of an instruction that each ask for something ("inspect the bike, *then*
    #: wait in the lounge"; "grab the food *but* keep away from the bed")
    part_words: tuple[str, ...] = ()
    #: word -> the ontology labels it names ("mesh place" -> ("MeshPlace",)); () for a word naming any node
    layer_words: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    floors: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    answer_words: tuple[str, ...] = ()
    #: words that say in which words to answer ("just *answer* bed or bicycle")
    reply_words: tuple[str, ...] = ()
    #: words asking for nodes by their ids ("answer with the *id*", "*symbols* please")
    id_words: tuple[str, ...] = ()
    mass_nouns: frozenset[str] = frozenset()
    mass_noun_endings: tuple[str, ...] = ()
    #: (plural ending, singular ending) pairs, tried in order: ("ies", "y") for batteries -> battery
    singular_endings: tuple[tuple[str, str], ...] = ()
    #: the answers to a yes/no question (for true, for false)
    yes_no_answer: tuple[str, str] = ("yes", "no")
    list_join: tuple[str, str] = (", ", " and ")
    #: the planner's instructions and its example templates ({"q": ..., "plan": ...}) of the language
    plan_intro: str = ""
    plan_examples: tuple[Mapping[str, str], ...] = ()
    #: the distance form's instructions ({layers}) and its example templates ({"q": ..., "form": ...})
    measure_intro: str = ""
    measure_examples: tuple[Mapping[str, str], ...] = ()
    #: the compare form's instructions ({layers}, {measures}) and its example templates ({"q": ..., "form": ...})
    compare_intro: str = ""
    compare_examples: tuple[Mapping[str, str], ...] = ()
    #: how instructions map onto goal predicates (prompt text; {a} {b} {r} are filled with graph values)
    goal_rules: str = ""
    #: instruction -> goal-sketch example templates ({"q": ..., "goal": ...}) of the language
    instruction_examples: tuple[Mapping[str, str], ...] = ()
    #: question -> Cypher example templates ({"q": ..., "cypher": ...} and, optionally, "needs": slots the
    #: template needs besides those it says), in the order they are offered
    qa_examples: tuple[Mapping[str, str], ...] = ()
    #: classes the examples name where the graph's leaves have none
    placeholder_classes: tuple[str, ...] = ()
    #: the question that finds the nodes a goal sketch's phrase describes ({phrase}: "box nearest the bag")
    phrase_question: str = "{phrase}?"
    #: verbs that, right before another goal family's word, ask only for that one ("*go* inspect the sign",
    #: "*come and* grab the bag": safe, holding; not also visited)
    light_verbs: tuple[str, ...] = ()
    #: words after which a light verb still asks for its own family ("go *look* at the lamp": a visit)
    light_verb_exceptions: tuple[str, ...] = ()
    #: goal predicate family (or predicate, or "not") -> the words that ask for it
    goal_words: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: endings a word takes in running text ("" first): "pick" is said "picks", "picked", "picking"
    word_endings: tuple[str, ...] = ("",)

    def says(self, text: str, words: Iterable[str]) -> list[str]:
        """The ``words`` that ``text`` says (whole words, any of the language's ``word_endings``)."""
        low = text.lower()
        return [w for w in words if re.search(self._said(w), low)]

    def said_spans(self, text: str, words: Iterable[str]) -> list[tuple[int, int]]:
        """Where ``text`` says any of ``words`` (start, end), in order of position."""
        low = text.lower()
        return sorted((m.start(), m.end()) for w in words if w for m in re.finditer(self._said(w), low))

    def _said(self, word: str) -> str:
        """The pattern of ``word`` said in running lower-cased text: a whole word, any of ``word_endings``;
        a word ending in a silent ``e`` also without it before an ending that starts with a vowel
        ("examine": "examining")."""
        ends = "|".join(re.escape(e) for e in sorted(self.word_endings, key=len, reverse=True))
        low = word.lower()
        stem = f"{re.escape(low)}(?:{ends})"
        vowel_ends = [e for e in self.word_endings if e[:1] in ("a", "e", "i", "o", "u")]
        if low.endswith("e") and len(low) > 2 and low[-2] not in "aeiou" and vowel_ends:
            alt = "|".join(re.escape(e) for e in sorted(vowel_ends, key=len, reverse=True))
            stem = f"(?:{stem}|{re.escape(low[:-1])}(?:{alt}))"
        return rf"(?<![\w']){stem}(?![\w'])"

    def said_keys(self, text: str, table: Mapping[str, Iterable[str]]) -> set[str]:
        """The keys of ``table`` (key -> words) whose words ``text`` says, a word inside a longer said phrase
        of another key not counting ("check on" says only ``visited``, not also ``safe`` by "check"), nor a
        light verb right before another key's word ("go inspect" says only ``safe``)."""
        low = text.lower()
        spans = [
            (m.start(), m.end(), key)
            for key, words in table.items()
            for w in words
            for m in re.finditer(self._said(w), low)
        ]
        light = [
            (m.start(), key)
            for w in self.light_verbs
            for m in re.finditer(self._said(w) + r"\s+", low)
            if not any(re.match(self._said(x), low[m.end() :]) for x in self.light_verb_exceptions)
            for s, _, key in spans
            if s == m.end()
        ]
        return {
            key
            for s, e, key in spans
            if not any(k != key and s2 <= s and e <= e2 and e2 - s2 > e - s for s2, e2, k in spans)
            and not any(at == s and k != key for at, k in light)
        }

    def join(self, items: Sequence[str]) -> str:
        """``items`` as one phrase ("R3", "R3 and R5", "R2, R3 and R5")."""
        sep, last = self.list_join
        return items[0] if len(items) == 1 else sep.join(items[:-1]) + last + items[-1]

    def has_any(self, text: str, words: Iterable[str]) -> bool:
        """Whether ``text`` holds one of ``words`` as whole words (case-insensitive)."""
        return self.find_any(text, words) is not None

    @staticmethod
    def find_any(text: str, words: Iterable[str]) -> re.Match[str] | None:
        alternatives = sorted((re.escape(w) for w in words if w), key=len, reverse=True)
        if not alternatives:
            return None
        return re.search(rf"\b(?:{'|'.join(alternatives)})\b", text, re.I)

    def starts_with_any(self, text: str, words: Iterable[str]) -> bool:
        m = self.find_any(text, words)
        return m is not None and not text[: m.start()].strip()

    def is_yes_no(self, question: str) -> bool:
        """Whether ``question`` only asks yes or no ("Are R1 and R5 connected?", not "Is there a bag? Which
        one?"), or names the yes/no answers ("..., yes or no"). The asking clause may follow a sentence or a
        clause before it ("I'm in the lounge. Is there a bin?", "If I stay on the places, can I reach P3?", "Hey,
        just visiting - is there a bike?")."""
        if all(self.has_any(question, [w]) for w in self.yes_no_answer):
            return True
        clauses = re.split(r"[.,;:!?]\s+|\s[-\u2013\u2014]+\s", question)  # a dash between words ends one too
        return any(self.starts_with_any(c, self.yes_no_starts) for c in clauses) and not self.has_any(
            question, self.asks_more
        )

    def says_choice(self, text: str) -> list[str]:
        """The ``choice_words`` that ``text`` says as a choice: not one right before one of ``order_words``
        ("visit R3, R4 and R5, *any order*": every one, in any order)."""
        low = text.lower()
        order = "|".join(re.escape(w) for w in sorted(self.order_words, key=len, reverse=True))
        return [
            w
            for w in self.choice_words
            if any(
                not re.match(rf"\s+(?:{order})\b", low[m.end() :]) for m in re.finditer(self._said(w), low)
            )
        ]

    def asked_phrase(self, question: str) -> list[str]:
        """The words of the phrase the first question word opens, lower-cased: after a leading verb of
        ``yes_no_starts`` ("what *is* the class of"), up to the next such verb, a ``description_openers`` word
        or punctuation ("what's the most common object class | in R1" -> the most common object class);
        empty when the question has no question word."""
        m = self.find_any(question, self.which)
        if m is None:
            return []
        phrase: list[str] = []
        for raw in re.findall(r"[\w']+|[.,;:!?]", question[m.end() :]):
            word = raw.lower().strip("'")
            if not word or (word == "s" and not phrase):
                continue  # a lone quote; "what's"
            if not word[0].isalnum() or word in self.description_openers:
                break
            if word in self.yes_no_starts:
                if phrase:
                    break
                continue
            phrase.append(word)
        return phrase

    def offered_answers(self, question: str) -> tuple[str, ...]:
        """The answers ``question`` offers after one of ``reply_words`` ("just answer bed or bicycle": bed,
        bicycle): two to four words or short phrases joined by "or" / commas up to the clause's end; empty
        when it offers none."""
        for _, end in self.said_spans(question, self.reply_words):
            clause = re.split(r"[.;:!?]", question[end:], maxsplit=1)[0]
            words = clause.split()
            if words and words[0].lower() in ("with", "either"):
                clause = " ".join(words[1:])
            options = [o.strip(" '\"") for o in re.split(r",\s*|\s+or\s+", clause.strip()) if o.strip()]
            if 2 <= len(options) <= 4 and all(0 < len(o.split()) <= 2 for o in options) and " or " in clause:
                return tuple(options)
        return ()

    def vocabulary(self) -> frozenset[str]:
        """Every single word of the language's tables (question words, goal verbs, layer words, lexicon
        words): what :meth:`respelled` corrects towards."""
        tables: list[Iterable[str]] = [
            self.lexicon,
            self.which,
            self.asks_more,
            self.order_words,
            self.choice_words,
            self.every_words,
            self.sequence_words,
            self.position_words,
            self.kind_words,
            self.count_words,
            self.id_words,
            self.distance_superlatives,
            self.distance_comparatives,
            self.description_openers,
            self.connection_words,
            self.via_words,
            self.nearness_words,
            self.source_words,
            self.negation_words,
            self.exclusion_words,
            self.part_words,
            self.layer_words,
            *self.goal_words.values(),
        ]
        return frozenset(
            w for table in tables for phrase in table for w in re.findall(r"[a-z]+", phrase.lower())
        )

    def respelled(self, text: str, extra: Iterable[str] = ()) -> tuple[str, list[str]]:
        """``text`` with each word of five or more letters that is no known word but one swap of two
        neighbouring letters away from exactly one word of :meth:`vocabulary` and ``extra`` (a graph's
        class names) written as that word ("inspcet" -> "inspect", "categroy" -> "category"), or else the same
        letters shuffled between the same first and last ones ("bycicle" -> "bicycle"), and a note per change.
        Such slips rarely turn one word into another, so known words are never touched."""
        known = self.vocabulary() | {w for e in extra for w in re.findall(r"[a-z]+", e.lower())}
        notes: list[str] = []

        def fix(m: re.Match[str]) -> str:
            word = m.group(0)
            low = word.lower()
            if (
                len(low) < 5
                or low in known
                or any(low.endswith(e) and low[: -len(e)] in known for e in self.word_endings if e)
            ):
                return word
            swaps = {low[:i] + low[i + 1] + low[i] + low[i + 2 :] for i in range(len(low) - 1)}
            hits = sorted(swaps & known)
            if not hits:  # letters shuffled farther apart ("bycicle"): the same letters, first and last kept
                hits = sorted(
                    k
                    for k in known
                    if len(k) == len(low) and k[0] == low[0] and k[-1] == low[-1] and sorted(k) == sorted(low)
                )
            if len(hits) != 1:
                return word
            notes.append(f"read {word!r} as {hits[0]!r}")
            return hits[0]

        return re.sub(r"(?<![\w'])[A-Za-z]+(?![\w'])", fix, text), notes

    def negations(self, text: str) -> list[str]:
        """The ``negation_words`` ``text`` says, and its ``determiner_negations`` said before a word where it
        does not name its yes/no answers ("has no connection": "no"; "yes or no please": nothing)."""
        said = self.says(text, self.negation_words)
        if all(self.has_any(text, [w]) for w in self.yes_no_answer):
            return said
        low = text.lower()
        return said + [
            w for w in self.determiner_negations if re.search(rf"(?<![\w']){re.escape(w)}\s+[a-z]", low)
        ]

    def word_forms(self, word: str) -> list[str]:
        """``word`` and its singular candidates by the language's endings (shelves -> shelf)."""
        return [word] + [
            word[: len(word) - len(plural)] + singular
            for plural, singular in self.singular_endings
            if word.endswith(plural)
        ]

    def yes_no(self, value: bool) -> str:
        """The answer to a yes/no question for ``value``."""
        return self.yes_no_answer[0] if value else self.yes_no_answer[1]


def _read(path: Path) -> dict[str, Any]:
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except FileNotFoundError:
        raise WordsError(f"{path}: words file not found") from None
    except yaml.YAMLError as exc:
        raise WordsError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise WordsError(f"{path}: expected a mapping of word lists")
    return data


_LISTS = (
    "stop",
    "not_entities",
    "which",
    "yes_no_starts",
    "asks_more",
    "order_words",
    "pair_words",
    "choice_words",
    "sequence_words",
    "alternative_words",
    "every_words",
    "position_words",
    "light_verbs",
    "light_verb_exceptions",
    "count_words",
    "kind_words",
    "distance_superlatives",
    "distance_comparatives",
    "larger_words",
    "smaller_words",
    "description_openers",
    "negation_words",
    "determiner_negations",
    "exclusion_words",
    "connection_words",
    "source_words",
    "nearness_words",
    "via_words",
    "clause_words",
    "antecedent_pronouns",
    "destination_words",
    "part_words",
    "answer_words",
    "reply_words",
    "id_words",
    "mass_nouns",
    "mass_noun_endings",
    "region_classes",
)


def _merge(files: Sequence[Path]) -> Words:
    lexicon: dict[str, tuple[str, ...]] = {}
    lists: dict[str, list[str]] = {}
    layers: dict[str, tuple[str, ...]] = {}
    floors: dict[str, tuple[str, ...]] = {}
    extra: dict[str, Any] = {}
    origin: dict[str, Path] = {}  # the file each key of ``extra`` came from
    for path in files:
        data = _read(path)
        for word, classes in (data.get("lexicon") or {}).items():
            if not isinstance(word, str):
                raise WordsError(f"{path}: lexicon: {word!r} is not a word")
            lexicon[word.lower()] = tuple(c for c in _flat(classes))
        if "singular_endings" in data:
            extra["singular_endings"] = _endings(data["singular_endings"], path)
        for key in (
            "plan_intro",
            "plan_examples",
            "measure_intro",
            "measure_examples",
            "compare_intro",
            "compare_examples",
            "goal_rules",
            "instruction_examples",
            "qa_examples",
            "placeholder_classes",
            "goal_words",
            "word_endings",
            "phrase_question",
            "list_join",
            "yes_no_answer",
        ):
            if key in data:
                extra[key], origin[key] = data[key], path
        for key in _LISTS:
            lists.setdefault(key, []).extend(w.lower() for w in _flat(data.get(key)))
        for word, labels in (data.get("layer_words") or {}).items():
            layers[str(word).lower()] = tuple(_flat(labels))
        for key, names in (data.get("floors") or {}).items():
            floors[str(key)] = tuple(w.lower() for w in _flat(names))
    return Words(
        lexicon=lexicon,
        region_classes=tuple(lists.get("region_classes", ())),
        stop=frozenset(lists.get("stop", ())),
        not_entities=frozenset(lists.get("not_entities", ())),
        which=tuple(lists.get("which", ())),
        yes_no_starts=tuple(lists.get("yes_no_starts", ())),
        asks_more=tuple(lists.get("asks_more", ())),
        order_words=tuple(lists.get("order_words", ())),
        pair_words=tuple(lists.get("pair_words", ())),
        choice_words=tuple(lists.get("choice_words", ())),
        every_words=tuple(lists.get("every_words", ())),
        sequence_words=tuple(lists.get("sequence_words", ())),
        alternative_words=tuple(lists.get("alternative_words", ())),
        position_words=tuple(lists.get("position_words", ())),
        count_words=tuple(lists.get("count_words", ())),
        kind_words=tuple(lists.get("kind_words", ())),
        distance_superlatives=tuple(lists.get("distance_superlatives", ())),
        distance_comparatives=tuple(lists.get("distance_comparatives", ())),
        larger_words=tuple(lists.get("larger_words", ())),
        smaller_words=tuple(lists.get("smaller_words", ())),
        description_openers=tuple(lists.get("description_openers", ())),
        negation_words=tuple(lists.get("negation_words", ())),
        determiner_negations=tuple(lists.get("determiner_negations", ())),
        exclusion_words=tuple(lists.get("negation_words", ())) + tuple(lists.get("exclusion_words", ())),
        connection_words=tuple(lists.get("connection_words", ())),
        source_words=tuple(lists.get("source_words", ())),
        nearness_words=tuple(lists.get("nearness_words", ())),
        via_words=tuple(lists.get("via_words", ())),
        clause_words=tuple(lists.get("clause_words", ())),
        antecedent_pronouns=tuple(lists.get("antecedent_pronouns", ())),
        destination_words=tuple(lists.get("destination_words", ())),
        part_words=tuple(lists.get("part_words", ())),
        layer_words=layers,
        floors=floors,
        answer_words=tuple(lists.get("answer_words", ())),
        reply_words=tuple(lists.get("reply_words", ())),
        id_words=tuple(lists.get("id_words", ())),
        light_verbs=tuple(lists.get("light_verbs", ())),
        light_verb_exceptions=tuple(lists.get("light_verb_exceptions", ())),
        mass_nouns=frozenset(lists.get("mass_nouns", ())),
        mass_noun_endings=tuple(lists.get("mass_noun_endings", ())),
        singular_endings=extra.get("singular_endings", ()),
        list_join=_join(extra.get("list_join")),
        yes_no_answer=_pair(extra.get("yes_no_answer"), ("yes", "no")),
        plan_intro=" ".join(str(extra.get("plan_intro", "")).split()),
        plan_examples=tuple(dict(e) for e in extra.get("plan_examples") or ()),
        measure_intro=" ".join(str(extra.get("measure_intro", "")).split()),
        measure_examples=_templates(extra.get("measure_examples"), ("q", "form"), origin, "measure_examples"),
        compare_intro=" ".join(str(extra.get("compare_intro", "")).split()),
        compare_examples=_templates(extra.get("compare_examples"), ("q", "form"), origin, "compare_examples"),
        goal_rules=str(extra.get("goal_rules", "")).strip(),
        instruction_examples=_templates(
            extra.get("instruction_examples"), ("q", "goal"), origin, "instruction_examples"
        ),
        qa_examples=_templates(
            extra.get("qa_examples"), ("q", "cypher"), origin, "qa_examples", optional=("needs",)
        ),
        placeholder_classes=tuple(_flat(extra.get("placeholder_classes"))),
        goal_words={
            str(k): tuple(w.lower() for w in _flat(v)) for k, v in (extra.get("goal_words") or {}).items()
        },
        word_endings=tuple(_flat(extra.get("word_endings"))) or ("",),
        phrase_question=str(extra.get("phrase_question", "{phrase}?")),
    )


def fill_templates(templates: Iterable[Mapping[str, str]], slots: Mapping[str, str]) -> list[dict[str, str]]:
    """Each template with every field filled from ``slots``; a template naming a slot the graph has no value
    for (a layer it lacks) is left out."""
    out = []
    for item in templates:
        try:
            out.append({key: text.format(**slots) for key, text in item.items()})
        except (KeyError, IndexError):
            continue
    return out


def _templates(
    value: Any, keys: tuple[str, ...], origin: Mapping[str, Path], name: str, optional: tuple[str, ...] = ()
) -> tuple[dict[str, str], ...]:
    """The templates of words key ``name`` (``value``, read from ``origin[name]``): each with its ``keys``
    and those of ``optional`` it has, as strings."""
    items = value or ()
    if not isinstance(items, list) or not all(isinstance(i, dict) and set(keys) <= set(i) for i in items):
        raise WordsError(f"{origin.get(name)}: {name}: expected a list of {{{', '.join(keys)}}} templates")
    return tuple({k: str(i[k]) for k in (*keys, *optional) if k in i} for i in items)


def _pair(value: Any, default: tuple[str, str]) -> tuple[str, str]:
    words = _flat(value) if value is not None else []
    return (words[0], words[1]) if len(words) == 2 else default


def _endings(value: Any, path: Path) -> tuple[tuple[str, str], ...]:
    pairs = value or ()
    if not isinstance(pairs, list) or not all(
        isinstance(p, list) and len(p) == 2 and all(isinstance(e, str) for e in p) for p in pairs
    ):
        raise WordsError(f"{path}: singular_endings: expected [plural ending, singular ending] pairs")
    return tuple((plural.lower(), singular.lower()) for plural, singular in pairs)


def _join(value: Any) -> tuple[str, str]:
    if isinstance(value, dict):
        return (str(value.get("separator", ", ")), str(value.get("last", " and ")))
    return (", ", " and ")


#: the files beside ``<lang>.yaml`` that belong to a language (``examples-en.yaml``), in the order loaded
_COMPANIONS = ("examples-", "lexicon-")


@functools.lru_cache(maxsize=16)
def _load(language: str, extra: tuple[str, ...]) -> Words:
    files = [WORDS_DIR / f"{language}.yaml"]
    files += [p for prefix in _COMPANIONS if (p := WORDS_DIR / f"{prefix}{language}.yaml").exists()]
    files.extend(Path(p) for p in extra)
    if not files[0].exists():
        known = sorted(p.stem for p in WORDS_DIR.glob("*.yaml") if not p.stem.startswith(_COMPANIONS))
        raise WordsError(f"no words for language {language!r} (have: {', '.join(known)})")
    return _merge(files)


def load_words(language: str = "en", extra: Iterable[str | Path] = ()) -> Words:
    """The words of ``language`` with the lexicon files ``extra`` added (later files win for a word)."""
    return _load(language, tuple(str(p) for p in extra))
