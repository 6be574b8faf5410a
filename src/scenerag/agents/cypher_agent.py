"""``CypherAgent``: questions and instructions over a scene graph, answered by LLM-written Cypher.

One pipeline, each stage general over graphs and phrasings (words of a language live in data files,
:mod:`scenerag.agents.words`):

1. **plan** (agentic QA): the model says whether the question is one step or numbered steps whose later
   ones use the first one's answer (``#1``), decoded under a grammar (:mod:`~scenerag.agents.plan`); each
   step runs this pipeline and its node symbols fill the next step;
2. **link** the question's mentions to stored values and symbols (:mod:`~scenerag.agents.linking`);
3. **retrieve** the most similar worked examples generated from the live graph
   (:mod:`~scenerag.agents.examples`), by the question with its mentions masked;
4. **generate** candidate queries — greedy first; more, sampled from the same prompt evaluation, when the
   first does not hold up (or always, ``vote="always"``) — decoded by local models under a grammar built
   from the live schema (:mod:`~scenerag.agents.cypher_grammar`): only its labels, relationship types in
   the directions the graph has, its property keys and values;
5. **check, repair, run** each candidate: the schema checks of :mod:`~scenerag.agents.cypher_check` and the
   repairs of :mod:`~scenerag.agents.query_repair` (forms that cannot run or cannot mean anything, never
   a rewrite from the question's wording), read-only, time-limited, row-capped;
6. **grade and vote** (:mod:`~scenerag.agents.voting`): errors, suspicious empty results, answers of the
   wrong kind or layer and queries that ignore what the question names lose; the answers of the best
   grade vote. With no good candidate (``agentic``) the best one goes back with a diagnosis, up to
   ``max_tool_calls`` rounds; a query the model writes again after being told is taken as meant;
7. **format** rows as SLDP without another LLM call (:mod:`~scenerag.agents.answer_format`). Instructions
   become PDDL goal sketches whose arguments are resolved through queries and checked
   (:mod:`~scenerag.agents.goal_sketch`, :class:`~scenerag.agents.grounding.PddlGrounder`).

``feedforward`` runs one round and never corrects; ``with_schema=False`` leaves the schema out of the prompt.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import re
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from scenerag.agents import prompts
from scenerag.agents.answer_format import NOT_FOUND, format_rows, zero_when_nothing_matches
from scenerag.agents.base import RunState, extract_goal, normalize_answer, sldp_problems
from scenerag.agents.compare_form import (
    CompareForm,
    CompareForms,
    as_asked,
    compares_two,
    in_direction,
    parse_compare,
    ranks_to_one,
)
from scenerag.agents.cypher_check import bind_named_classes, check_cypher
from scenerag.agents.cypher_grammar import cypher_grammar, question_strings
from scenerag.agents.cypher_tool import is_symbol, ran_record, summarize_rows
from scenerag.agents.examples import CypherExample, ExampleLibrary, GraphRoles, adapt_example, unclash
from scenerag.agents.goal_sketch import (
    Named,
    SketchError,
    align_to_verbs,
    choice_as_any,
    complete_parts,
    end_where_said,
    join_to_relation,
    never_entered,
    offer_alternatives,
    one_end,
    only_negations,
    polarity_where_said,
    refer_back,
    resolve_sketch,
    said_alone,
    scope_to_named_class,
    sequence_as_and,
    sketch_grammar,
    verb_problems,
    widen_to_descriptions,
    widen_to_layer_heads,
)
from scenerag.agents.grounding import PddlGrounder
from scenerag.agents.linking import EntityLinker, Link, mask_question
from scenerag.agents.measure_form import ANY, MeasureForms, measures_distance, parse_form
from scenerag.agents.model_work import MeteredModel, WorkRates
from scenerag.agents.plan import PLAN_GRAMMAR, Plan, Planner, parse_plan, plan_problem
from scenerag.agents.query_repair import (
    bind_path_variable,
    carry_dropped_nodes,
    carry_dropped_variables,
    center_arguments,
    close_open_subqueries,
    contents_of_the_neighbour,
    count_every_group,
    count_none_optionally,
    count_per_group_again,
    counts_pinned_ends,
    drop_class_filter,
    drop_contradicted_class,
    drop_contradicted_leg,
    drop_idle_sibling,
    drop_idle_with,
    drop_return_trip,
    drop_unnamed_container,
    either_symbol,
    exclude_the_reference,
    group_by_the_other_node,
    holder_classes,
    inline_patterns,
    key_filters,
    length_of_one_shortest_path,
    memberless_scopes,
    mend_sql_aggregation,
    merge_union_by_symbol,
    one_hop,
    others_for_self_distance,
    pin_named_member,
    repair_mentions,
    repair_node_operators,
    repair_query,
    repair_symbol_layers,
    return_clause,
    return_the_neighbour,
    split_subquery_arithmetic,
    symbol_for_position,
    symbols_as_nodes,
    unjoin_measured_pair,
    unname_predicate_nodes,
    unpin_twice_named,
    unrelated_nodes,
    var_labels,
    widen_shortest_paths,
)
from scenerag.agents.result import AgentResult, Task, ToolRecord
from scenerag.agents.voting import Grade, Outcome, vote
from scenerag.agents.words import Words, load_words
from scenerag.errors import SceneRagError
from scenerag.graph import ontology as ont
from scenerag.lang.pddl_goal import HERACLES_DOMAIN, GoalDomain
from scenerag.lang.sldp import SldpFormatError
from scenerag.llm.base import ChatModel, LLMError, Message, sample_replies
from scenerag.progress import SILENT, StageProgress
from scenerag.store.base import GraphStore, QueryResult

if TYPE_CHECKING:
    from scenerag.retrieval.embeddings import Embedder
    from scenerag.store.schema import GraphSchema

__all__ = [
    "CypherAgent",
    "CypherAgentConfig",
    "invented_symbols",
    "parse_reply",
    "shape_mismatch",
    "unused_links",
]

Mode = Literal["agentic", "feedforward"]
VotePolicy = Literal["adaptive", "always"]

#: symbols listed in the grammar one by one up to this many; above, any symbol-shaped string may be written
_MAX_GRAMMAR_SYMBOLS = 5000
_NEGATES = re.compile(r"(?i)\bNOT\b|<>|!=|\bIS\s+NULL\b|\bnone\s*\(|=\s*0(?![.\d])|<\s*1(?![.\d])")
"""A query that negates: NOT, <>, IS NULL, none(...), a count compared with 0."""
_NEGATES_PATTERN = re.compile(r"(?i)\bNOT\s+EXISTS\b|\bNOT\s*\(|\bWHERE\s+NOT\b|\bAND\s+NOT\b|\bnone\s*\(")
"""A query that asks a pattern or condition not to hold (``x <> ref`` is no such negation)."""


@dataclass
class CypherAgentConfig:
    """Settings of one ``CypherAgent`` variant."""

    mode: Mode = "agentic"
    with_schema: bool = True
    #: rounds of queries per question (agentic: the first plus corrections)
    max_tool_calls: int = 3
    #: candidate queries per round to vote over (1: greedy only)
    candidates: int = 3
    #: "adaptive": in the first round, sample the other candidates only when the greedy query does not hold
    #: up (agentic only: feedforward is one reply; corrections are one reply each); "always": every round
    #: decodes ``candidates`` replies and votes
    vote: VotePolicy = "adaptive"
    temperature: float = 0.7
    #: decode local models under a grammar built from the live schema
    grammar: bool = True
    #: typed multi-step plans (agentic QA only)
    plan: bool = True
    #: the distance form (agentic QA only): when the first round does not hold up and it measured distances,
    #: the model fills slots and the query is built from them (:mod:`scenerag.agents.measure_form`)
    measure_form: bool = True
    #: the compare form (agentic QA only): when the model's first query (or the nearest worked example)
    #: compares two values, the model names the two sides and the measure and the query is built from them
    #: (:mod:`scenerag.agents.compare_form`); its answer is preferred when it holds up
    compare_form: bool = True
    #: worked examples retrieved into the prompt (0: none); instructions get fewer: the 1.5B model copies
    #: the predicates of whatever examples it sees
    examples_k: int = 4
    examples_k_pddl: int = 4
    #: user example files (YAML) added to the generated ones
    example_files: tuple[str, ...] = ()
    #: the language of questions (``agents/words/<language>.yaml``) and extra lexicon files (YAML)
    language: str = "en"
    lexicon_files: tuple[str, ...] = ()
    link_entities: bool = True
    #: embedder spec for example retrieval and linking ("none": word overlap and rules only)
    embedder: str = "minilm-numpy"
    query_timeout_s: float = 10.0
    max_rows: int = 200
    result_budget_tokens: int = 300
    max_reply_tokens: int = 200
    #: repair forms that cannot run (classes as labels, wrong case, missing containment hops) before running
    auto_repair: bool = True
    #: model work, in seconds at the reference rates (``model_work.WorkRates``: a local call costs its evaluated
    #: prompt tokens and decode steps at the reference host's speed, an endpoint call its wall time), plus the
    #: agent's own time between calls, after which a question starts no new round, plan or sample (the best
    #: answer so far is given); None: no limit. The same on a slow and a fast host, so a run is reproducible
    work_budget_s: float | None = 20.0
    #: the reference host's speed the work is counted at (prompt tokens/s, decode steps/s)
    reference_prompt_tps: float = 55.0
    reference_decode_tps: float = 18.0
    #: wall-clock seconds after which a question starts nothing new, whatever its work (a guard for a very
    #: slow or overloaded host); None: no limit
    time_budget_s: float | None = 45.0

    @property
    def name(self) -> str:
        return f"cypher-{self.mode}-{'schema' if self.with_schema else 'noschema'}"


_QA_INTRO = (
    "You translate questions about a robot's 3D scene graph into one read-only Neo4j Cypher query over "
    "its graph database."
)
QA_SYSTEM_START = _QA_INTRO
_QA_RULES = (
    "Rules: kinds of things are values of the class property, never labels: ({var}:{leaf} {{class: '{cls}'}}). "
    "{containment}*_CONNECTED edges are "
    "undirected. Distances: point.distance(a.center, b.center); heights: a.center.z. Return node symbols (n.nodeSymbol) unless "
    "the question asks for something else; return only what answers the question. Compute aggregates with "
    "WITH before filtering them.\nReply with the Cypher query only, on one line."
)


def qa_rules(schema: GraphSchema, common_class: str | None = None) -> str:
    """The rules of the QA prompt, with the graph's own leaf label, a class of it (``common_class``, else
    the first listed) and the containment hop a model most often writes wrong (the deepest container that
    holds leaves only through another layer: Hydra's rooms through places, a KeySG building's floors
    through rooms)."""
    roles = GraphRoles.from_schema(schema)
    leaf = roles.leaf or ont.OBJECT
    info = schema.node_properties.get(leaf, {}).get(ont.CLASS_KEY)
    plain = _layer_word(leaf, plural=False)
    values = [v for v in (info.values or []) if v.lower() != plain] if info is not None else []
    cls = common_class or (values[0] if values else plain)
    direct = {(a, b) for (a, t, b) in schema.patterns if t == ont.CONTAINS}
    containment = ""
    for chain in schema.containment_chains():
        if leaf not in chain:
            continue
        upper = [i for i in range(chain.index(leaf) - 1) if (chain[i], leaf) not in direct]
        if upper:
            top, via = chain[upper[-1]], chain[upper[-1] + 1]
            containment = (
                f"{_layer_word(top).capitalize()} hold {_layer_word(leaf)} only through {_layer_word(via)}: "
                f"({top[0].lower()}:{top})-[:CONTAINS*]->({leaf[0].lower()}:{leaf}). "
            )
            break
    return _QA_RULES.format(var=leaf[0].lower(), leaf=leaf, cls=cls, containment=containment)


def _layer_word(label: str, *, plural: bool = True) -> str:
    """How a layer is called in a sentence: ``MeshPlace`` -> ``places``, ``Room`` -> ``rooms``."""
    word = re.findall(r"[A-Z]?[a-z]+", label)[-1].lower() if re.search(r"[a-z]", label) else label.lower()
    return word + "s" if plural else word


_PDDL_INTRO = (
    "You turn instructions for a robot into PDDL goal sketches over its 3D scene graph, "
    "querying the graph database with Cypher when needed."
)
PDDL_SYSTEM_START = _PDDL_INTRO
_STOP = ("\n\nQ:", "\nQ:", "\n\n", "\nInstruction:", "<|im_end|>", "```\n")


@dataclass
class _Draft:
    cypher: str
    goal: str | None = None


class CypherAgent:
    """Answers over ``store`` with ``model``; ``run()`` returns an :class:`AgentResult`.

    ``embedder`` overrides ``config.embedder``; ``library`` / ``linker`` override the ones built from the
    store (build them once and share them between agents on one graph).
    """

    def __init__(
        self,
        model: ChatModel,
        store: GraphStore,
        config: CypherAgentConfig | None = None,
        *,
        domain: GoalDomain = HERACLES_DOMAIN,
        embedder: Embedder | None = None,
        library: ExampleLibrary | None = None,
        linker: EntityLinker | None = None,
        progress: StageProgress | None = None,
    ) -> None:
        self.config = config or CypherAgentConfig()
        self.model = model  # metered: what the question's calls cost, for the work budget
        self.store = store
        self.domain = domain
        self.progress = progress or SILENT  # stage lines (scenerag.progress); silent by default
        self.grounder = PddlGrounder(store, domain, progress=self.progress)
        self.words: Words = load_words(self.config.language, self.config.lexicon_files)
        self._embedder = embedder
        self._library = library
        self._linker = linker
        self._planner: Planner | None = None
        self._forms: MeasureForms | None = None
        self._compare_forms: CompareForms | None = None
        self._phrase_state: RunState | None = None
        self._labels_of_symbols: dict[str, str] = {}  # node labels never change: looked up once per symbol
        self._strings: tuple[frozenset[str], bool] | None = None
        self._deadline: float | None = None
        self._started: float | None = None
        self._system: dict[str, str] = {}
        self._symbols_by_kind: dict[str, list[str]] | None = None
        self._widened: dict[str, str] = {}  # a sketch phrase widened to its description -> the class it was

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def model(self) -> MeteredModel:
        """The chat model, metered (every call's work counts against the question's work budget)."""
        return self._model

    @model.setter
    def model(self, model: ChatModel) -> None:
        rates = WorkRates(self.config.reference_prompt_tps, self.config.reference_decode_tps)
        self._model = model if isinstance(model, MeteredModel) else MeteredModel(model, rates)

    # -- components (built lazily: a question that needs none of them pays for none) --------------------
    def embedder(self) -> Embedder | None:
        if self._embedder is None and self.config.embedder.lower() not in ("", "none"):
            from scenerag.retrieval.embeddings import make_embedder

            try:
                self._embedder = make_embedder(self.config.embedder)
            except (SceneRagError, ImportError):
                self.config.embedder = "none"  # retrieval falls back to word overlap
        return self._embedder

    def linker(self) -> EntityLinker:
        if self._linker is None:
            self._linker = EntityLinker(self.store, embedder=self.embedder(), words=self.words)
        return self._linker

    def library(self) -> ExampleLibrary:
        if self._library is None:
            self._library = ExampleLibrary.for_store(
                self.store,
                embedder=self.embedder(),
                user_files=self.config.example_files,
                linker=self.linker() if self.config.link_entities else None,
            )
        return self._library

    def planner(self) -> Planner:
        if self._planner is None:
            self._planner = Planner(self.store, self.words)
        return self._planner

    # -- prompts ----------------------------------------------------------------------------------------
    def system_prompt(self, task: Task) -> str:
        """The static part (cached by local models): intro, schema, rules."""
        if task in self._system:
            return self._system[task]
        schema = (
            prompts.schema_block(self.store.schema())
            if self.config.with_schema
            else prompts.no_schema_block()
        )
        if task == "pddl":
            a, b, r = self._rule_words()
            text = "\n\n".join(
                [
                    _PDDL_INTRO,
                    schema,
                    "Goal predicates:\n" + self.domain.describe(),
                    self.words.goal_rules.format(a=a, b=b, r=r),
                ]
            )
        else:
            text = "\n\n".join([_QA_INTRO, schema, qa_rules(self.store.schema(), self._common_class())])
        self._system[task] = text
        return text

    def _rule_words(self) -> tuple[str, str, str]:
        """Two leaf classes and a region symbol of this graph, for the instruction rules' examples."""
        roles = GraphRoles.from_schema(self.store.schema())
        classes = [
            value
            for (label, key, value), nodes in sorted(
                self.linker().vocabulary().members.items(), key=lambda kv: -len(kv[1])
            )
            if label == roles.leaf and key == ont.CLASS_KEY and nodes
        ]
        regions = (
            self.store.query(
                f"MATCH (r:`{roles.region}`) RETURN r.{ont.SYMBOL_KEY} AS s ORDER BY s LIMIT 1"
            ).rows
            if roles.region
            else []
        )
        a = classes[0].replace("_", " ") if classes else "object"
        b = classes[1].replace("_", " ") if len(classes) > 1 else a
        return a, b, str(regions[0]["s"]) if regions else "R1"

    def _common_class(self) -> str | None:
        """The leaf class with the most nodes (for the rules' example)."""
        if not self.config.link_entities:
            return None
        leaf = GraphRoles.from_schema(self.store.schema()).leaf
        members = [
            (len(nodes), value)
            for (label, key, value), nodes in self.linker().vocabulary().members.items()
            if label == leaf and key == ont.CLASS_KEY and nodes
        ]
        return max(members)[1] if members else None

    def user_prompt(
        self,
        question: str,
        task: Task,
        links: Sequence[Link],
        examples: Sequence[CypherExample],
        answer_type: str | None = None,
    ) -> str:
        parts = []
        if examples:
            parts.append("Examples:\n" + "\n\n".join(e.render() for e in examples))
        said = [link.describe(symbols=task == "qa") for link in links]  # in a sketch, [class]: no nodes
        if task == "qa":
            said += self._relation_phrases(question, links)
        if said:
            parts.append(f"In this graph: {'; '.join(said)}.")
        if task == "pddl":
            parts.append(f"Instruction: {question}")
        else:
            hint = prompts.SLDP_TYPE_HINTS.get(answer_type or "", "")
            parts.append(
                f"Q: {question}" + (f"\n({hint})" if hint and answer_type in ("dict", "list") else "")
            )
        return "\n\n".join(parts)

    def _relation_phrases(self, question: str, links: Sequence[Link]) -> list[str]:
        """What the question's words for a direct connection mean in this graph ("'walk straight into' is
        (:Room)-[:ROOM_CONNECTED]-(:Room)"), from ``_connection``; empty when it says none."""
        said = self._connection(question, links)
        if said is None:
            return []
        words, label, edge = said
        return [
            f"{', '.join(repr(w) for w in words)} is ({label[0].lower()}:{label})-[:{edge}]-(:{label}), one hop"
        ]

    def _connection(self, question: str, links: Sequence[Link]) -> tuple[list[str], str, str] | None:
        """The question's words for a direct connection, the layer and its same-layer edge: the language's
        ``connection_words`` for the layer the question asks about or names that has such edges, and its
        ``nearness_words`` between two nodes of one such layer ("the hallway next to the lounge"); None
        otherwise."""
        schema = self.store.schema()
        own = {a: t for (a, t, b) in schema.patterns if a == b and t.endswith("_CONNECTED")}
        labels = [self._asked_label(question, links), *(link.label for link in links)]
        found = self.words.says(question, self.words.connection_words)
        near = self.words.says(question, self.words.nearness_words)
        said = self._layer_mentions(question, links)
        if near and any(label in own and said.count(label) >= 2 for label in set(said)):
            found = found + near
            labels = [label for label in said if said.count(label) >= 2]
        label = next((label for label in labels if label in own), None) if found else None
        return (found, label, own[label]) if label else None

    def _layer_mentions(self, question: str, links: Sequence[Link]) -> list[str]:
        """The layer of each node or class the question mentions, once per mention: a linked class or symbol
        ("the lounge"), or a layer word ("the room the bike is in")."""
        out = [link.label for link in links for _ in link.mentions]
        taken = [span for link in links for span in self.words.said_spans(question, link.mentions)]
        for word in sorted(self.words.layer_words, key=len, reverse=True):
            for a, b in self.words.said_spans(question, [word]):
                if not any(a < y and x < b for x, y in taken):
                    taken.append((a, b))
                    out += [label for label in self.words.layer_words[word][:1]]
        return out

    def grammar(self, question: str, links: Sequence[Link] = ()) -> str | None:
        """The GBNF grammar for queries about ``question`` whose mentions are ``links`` (None when the model
        cannot follow one, or the grammar is off): a class the links say is absent may be written too."""
        if not self.config.grammar or not getattr(self.model, "supports_grammar", False):
            return None
        strings, pattern = self._grammar_strings()
        absent = {link.value for link in links if not link.seen}
        return cypher_grammar(
            self.store.schema(), strings | absent | question_strings(question), symbol_pattern=pattern
        ).text

    def _grammar_strings(self) -> tuple[frozenset[str], bool]:
        """String values any query may use: stored values, symbols, unseen classes, answer words; and whether
        symbols are too many to list (then any symbol-shaped string is allowed)."""
        if self._strings is None:
            vocab = self.linker().vocabulary()
            rows = self.store.query(
                f"MATCH (n) WHERE n.{ont.SYMBOL_KEY} IS NOT NULL RETURN n.{ont.SYMBOL_KEY} AS s",
                max_rows=_MAX_GRAMMAR_SYMBOLS + 1,
            ).rows
            symbols = {str(r["s"]) for r in rows}
            pattern = len(rows) > _MAX_GRAMMAR_SYMBOLS
            names = {name for name in vocab.names}
            values = set(vocab.values) | set(vocab.unseen) | names | set(self.words.answer_words)
            self._strings = (frozenset(values | (set() if pattern else symbols)), pattern)
        return self._strings

    # -- run --------------------------------------------------------------------------------------------
    def run(self, question: str, *, task: Task = "qa", answer_type: str | None = None) -> AgentResult:
        """Answer ``question`` (``task="qa"``, SLDP) or ground it (``task="pddl"``, a PDDL goal).

        Agentic QA answers in one query first; when no candidate of the first round holds up, the model plans
        the question, and a plan of several steps is answered step by step (its answer is taken when its last
        step holds up; otherwise the one-query attempt goes on with corrections)."""
        start = time.perf_counter()
        outermost = self._started is None
        if outermost:
            self._started = start
            self.model.reset()
            if self.config.time_budget_s is not None:
                self._deadline = start + self.config.time_budget_s
        asked, respelled = (
            self.words.respelled(question, self._class_names()) if outermost else (question, [])
        )
        try:
            result = self._run_once(asked, task=task, answer_type=answer_type, allow_plan=True)
        finally:
            if outermost:
                self._deadline = self._started = None
        if respelled:
            result.context["rewrites"] = [*respelled, *result.context.get("rewrites", [])]
        result.question = question
        result.wall_s = time.perf_counter() - start
        if outermost:
            result.context.setdefault("timings_s", {})["work"] = round(self._work_s(start), 3)
        self.progress.stage("answer")
        return result

    def _held_by_the_room_said_first(
        self, query: str, question: str, links: Sequence[Link]
    ) -> tuple[str, list[str]]:
        """``(h:Room {class: 'hallway'})-[:ROOM_CONNECTED]-(l:Room {class: 'lounge'})-[:CONTAINS*]->(o)`` for
        "the seats in the hallway next to the lounge": the question says the hallway first and the lounge after
        a word for being next to it (the language's ``nearness_words`` / ``connection_words``), so the hallway
        holds the seats and the lounge is where it is; the two rooms trade places. ``(query, notes)``;
        unchanged when the question says them the other way round or no such word between them."""
        m = _NEIGHBOUR_HOLDS.search(query)
        if m is None:
            return query, []
        first = self._said_at(question, m.group("av"), links)
        second = self._said_at(question, m.group("bv"), links)
        if first is None or second is None or not first < second:
            return query, []
        between = question[first:second]
        if not self.words.says(between, (*self.words.nearness_words, *self.words.connection_words)):
            return query, []
        fixed = query[: m.start()] + m.group("b") + "-[:ROOM_CONNECTED]-" + m.group("a") + query[m.end("b") :]
        return fixed, [
            f"the question says {m.group('av')!r} holds it and {m.group('bv')!r} is next to it: matched it "
            f"inside {m.group('av')!r}"
        ]

    def _said_at(self, question: str, value: str, links: Sequence[Link]) -> int | None:
        """Where ``question`` first says ``value`` (a symbol, or a class by any mention linked to it)."""
        said = [value] + [m for link in links if link.value.lower() == value.lower() for m in link.mentions]
        spans = self.words.said_spans(question, [s.lower() for s in said])
        return spans[0][0] if spans else None

    def _drop_apposed_classes(
        self, query: str, question: str, links: Sequence[Link]
    ) -> tuple[str, list[str]]:
        """``query`` without a class filter on another node than the one a symbol pins, where the question
        says that class only right before the symbol, as the symbol's own class ("nearest to appliance O10":
        'appliance' describes O10, it asks for no appliance); ``(query, notes)``."""
        symbols = {link.value for link in links if link.key == ont.SYMBOL_KEY}
        pinned = {var for var, value in key_filters(query, ont.SYMBOL_KEY) if value in symbols}
        values = {value for var, value in key_filters(query, ont.CLASS_KEY) if var not in pinned}
        apposed = []
        for value in sorted(values) if pinned else ():
            said = {value.lower(), value.lower().replace("_", " ")}
            said |= {w for w, classes in self.words.lexicon.items() if classes and classes[0] == value}
            spans = self.words.said_spans(question, said)
            after = [re.match(r"\s+([A-Za-z]{1,2}\d+)\b", question[e:]) for _, e in spans]
            if spans and all(
                m is not None
                and m.group(1) in symbols
                and (self.linker().class_of(m.group(1)) or "").lower() == value.lower()
                for m in after
            ):
                apposed.append(value)
        if not apposed:
            return query, []
        fixed, notes = drop_class_filter(query, apposed)
        said_of = "the question says it of the named node"
        return fixed, [n.replace("the question never asks for it", said_of) for n in notes]

    def _class_names(self) -> list[str]:
        """Every class value the graph holds, of any label (what a misspelt word may be meant as)."""
        props = self.store.schema().node_properties
        return [v for by_key in props.values() if (i := by_key.get(ont.CLASS_KEY)) for v in i.values or ()]

    def _work_s(self, start: float) -> float:
        """The question's work so far: its model calls' work plus the agent's own wall time between them."""
        return time.perf_counter() - start - self.model.wall_s + self.model.work_s

    def _out_of_time(self, state: RunState, grace: float = 0.0) -> bool:
        """Whether the question's work budget (or its wall-clock guard) is spent: then no new round, plan or
        sample starts; ``grace`` (a share of a budget) lets one short constrained call still start (a form:
        one line, no query)."""
        budget, started = self.config.work_budget_s, self._started
        over_work = (
            budget is not None and started is not None and self._work_s(started) > budget * (1 + grace)
        )
        guard = self.config.time_budget_s
        late = over_work or (
            self._deadline is not None and time.perf_counter() > self._deadline + grace * (guard or 0.0)
        )
        if late:
            state.result.context["out_of_time"] = "work" if over_work else "wall"
        return late

    def _plan(self, question: str, earlier: list[AgentResult]) -> Plan | None:
        """The model's plan for ``question`` (one call, grammar-constrained where the model can follow it)."""
        planner = self.planner()
        self.progress.stage("planning", "the first query did not hold up: asking for steps")
        state = RunState(AgentResult(self.name, question, "qa", None))
        mark = time.perf_counter()
        state.messages = [Message.system(planner.system), Message.user(planner.user(question))]
        resp = self.model.chat(
            state.messages,
            max_tokens=90,
            stop=["\n\n", "\nQ:"],
            temperature=0.0,
            seed=0,
            grammar=PLAN_GRAMMAR.text if getattr(self.model, "supports_grammar", False) else None,
        )
        state.add_usage(resp.usage)
        state.messages.append(Message.assistant(resp.message.content))
        state.result.context["timings_s"] = {"plan": time.perf_counter() - mark}
        plan = parse_plan(resp.message.content)
        state.result.context["plan"] = list(plan.steps) if plan is not None else None
        earlier.append(state.finish())
        return plan

    def _dropped_by_plan(self, plan: Plan, links: Sequence[Link]) -> list[str]:
        """What the question names (``links``) that no step of ``plan`` names any more (a mention, one of
        its word forms, the value or a member symbol): a plan that loses an entity answers another question."""
        said = " ".join(plan.steps).lower()
        words = set(re.findall(r"[a-z0-9_]+", said))
        dropped = []
        for link in links:
            forms = {f for m in link.mentions for f in self.words.word_forms(m.lower())} | {
                link.value.lower()
            }
            forms |= {s.lower() for s in link.symbols}
            if not any((f in words) or (" " in f and f in said) for f in forms):
                dropped.append(link.mention)
        return dropped

    def _run_planned(
        self, question: str, answer_type: str | None, earlier: list[AgentResult]
    ) -> AgentResult | None:
        """Answer ``question`` by the model's plan, step by step; None (what was spent in ``earlier``) when the
        plan is one step, is no real decomposition (:func:`plan_problem`), or a step finds no nodes."""
        plan = self._plan(question, earlier)
        if plan is None or plan.single or plan_problem(plan, question) is not None:
            return None
        links = self.linker().link(question)
        if self.config.link_entities and self._dropped_by_plan(plan, links):
            return None
        answers: list[list[str]] = []
        steps: list[dict[str, Any]] = []
        result: AgentResult | None = None
        for i, step in enumerate(plan.steps):
            text = self.planner().fill(step, answers)
            last = i == len(plan.steps) - 1
            result = self._run_once(
                text, task="qa", answer_type=answer_type if last else "set", allow_plan=False, insist=False
            )
            steps.append({"question": text, "answer": result.answer})
            if last:
                break
            earlier.append(result)
            symbols = _symbols_of(result.answer)
            if not symbols:
                return None
            answers.append(symbols)
        if (
            result is None
            or result.answer is None
            or self._wrong_layer(question, links, result.answer) is not None
        ):  # a last step that answers with another layer than the question asks for answers another question
            if result is not None:
                earlier.append(result)
            return None
        result.context["steps"] = steps
        return result

    def _run_once(
        self,
        question: str,
        *,
        task: Task = "qa",
        answer_type: str | None = None,
        allow_plan: bool = False,
        insist: bool = True,
    ) -> AgentResult:
        """One question answered in one go: link, retrieve, generate, check, run, vote, format (QA may turn to
        a plan after its first round, ``allow_plan``)."""
        start = time.perf_counter()
        state = RunState(AgentResult(self.name, question, task, None))
        state.hints["allow_plan"] = (
            allow_plan and task == "qa" and self.config.plan and self.config.mode != "feedforward"
        )
        state.hints["insist"] = insist  # a query written again after a doubt is taken (not in plan steps)
        timings: dict[str, float] = {}
        state.result.context["timings_s"] = timings
        try:
            mark = time.perf_counter()
            self.progress.stage("linking")
            links = self.linker().link(question) if self.config.link_entities else []
            timings["link"] = time.perf_counter() - mark
            mark = time.perf_counter()
            examples: list[CypherExample] = []
            k = self.config.examples_k_pddl if task == "pddl" else self.config.examples_k
            if k > 0:
                self.progress.stage("examples")
                masked = mask_question(question, links)
                examples = self.library().retrieve(question, k, task=task, masked=masked)
                if task == "pddl":
                    named = {link.value for link in links if link.key == ont.SYMBOL_KEY}
                    spare = [s for symbols in self._kind_symbols().values() for s in symbols]
                    examples = [unclash(e, named, spare) for e in examples]
            timings["retrieve"] = time.perf_counter() - mark
            state.result.context.update(
                links=[link.describe() for link in links], examples=[e.question for e in examples]
            )
            state.messages = [
                Message.system(self.system_prompt(task)),
                Message.user(self.user_prompt(question, task, links, examples, answer_type)),
            ]
            if task == "pddl":
                self._ground(state, links)
            else:
                self._answer(state, question, answer_type, links, examples)
        except LLMError as exc:
            state.result.error = str(exc)
        state.result.wall_s = time.perf_counter() - start
        result = state.finish()
        planned = state.hints.get("planned")
        if planned is None:
            return result
        for before in [result, *state.hints.get("earlier", [])][::-1]:
            _absorb(planned, before)
        return planned

    def _rounds(self) -> int:
        return 1 if self.config.mode == "feedforward" else max(1, self.config.max_tool_calls)

    def _replies(self, state: RunState, n: int, grammar: str | None, *, greedy: bool = True) -> list[str]:
        """``n`` replies to the conversation so far (the first greedy unless ``greedy`` is False)."""
        mark = time.perf_counter()
        responses = sample_replies(
            self.model,
            state.messages,
            n=n,
            grammar=grammar,
            temperature=self.config.temperature,
            seed=1000 * len(state.result.tools) + 1,
            max_tokens=self.config.max_reply_tokens,
            stop=list(_STOP),
            greedy=greedy,
        )
        timings = state.result.context.setdefault("timings_s", {})
        timings["llm"] = timings.get("llm", 0.0) + time.perf_counter() - mark
        for r in responses:
            state.add_usage(r.usage)
        return [r.message.content for r in responses]

    # -- QA ---------------------------------------------------------------------------------------------
    def _answer(
        self,
        state: RunState,
        question: str,
        answer_type: str | None,
        links: Sequence[Link],
        examples: Sequence[CypherExample] = (),
    ) -> None:
        grammar = self.grammar(question, links)
        k = max(1, self.config.candidates)
        rounds: list[list[Outcome]] = []
        seen: dict[str, Outcome] = {}
        flagged: set[str] = set()  # queries sent back as doubtful or empty: written again, they are meant
        for round_ in range(self._rounds()):
            first = k if self.config.vote == "always" else 1
            fresh = self._evaluate_replies(
                state, self._replies(state, first, grammar), question, answer_type, links, seen, flagged
            )
            adaptive = self.config.vote == "adaptive" and self.config.mode != "feedforward"
            if (
                k > 1
                and adaptive
                and round_ == 0
                and not any(o.ok for o in fresh)
                and not self._out_of_time(state)
            ):
                more = self._replies(state, min(k, 4) - 1, grammar, greedy=False)  # the prompt is cached
                fresh += self._evaluate_replies(state, more, question, answer_type, links, seen, flagged)
            rounds.append(fresh)
            if (
                round_ == 0
                and self._compares(fresh, examples, links, question)
                and not self._out_of_time(state, grace=_FORM_GRACE)
            ):
                compared = self._answer_by_compare(state, question, answer_type, links)
                if compared is not None and compared.ok:
                    # the latest round: it wins a tie with the model's own query, whose sides may be swapped
                    rounds.append([compared])
                    break
            best = _vote_rounds(rounds)
            if best is not None and best.ok:
                break
            if (
                round_ == 0
                and self._measures(fresh, examples)
                and not self._out_of_time(state, grace=_FORM_GRACE)
            ):
                # before a plan: one short constrained reply, where a plan costs a call per step
                formed = self._answer_by_form(state, question, answer_type, links)
                if formed is not None:
                    # a candidate of its own: the corrections stay about the model's query
                    rounds.insert(0, [formed])
                    best = _vote_rounds(rounds)
                    if best is not None and best.ok:
                        break
            if (
                round_ == 0
                and best is not None
                and best.structural
                and state.hints.get("allow_plan")
                and not self._out_of_time(state)
                and self._answer_by_plan(state, question, answer_type)
            ):
                return
            latest = vote(fresh)  # the correction is about what the model wrote last
            if latest is None or round_ + 1 >= self._rounds() or self._out_of_time(state):
                break
            flagged |= {_normalized(o.cypher) for o in fresh if o.grade in (Grade.EMPTY, Grade.DOUBTFUL)}
            state.messages.append(Message.assistant(latest.reply.strip()))
            state.messages.append(
                Message.user(
                    f"{latest.problem or 'That query does not answer the question.'}\nWrite a corrected query."
                )
            )
        best = _vote_rounds(rounds)
        outcomes = [o for r in rounds for o in r]
        state.result.context["candidates"] = [
            {"query": o.cypher, "grade": o.grade.name.lower(), "answer": o.answer, "reply": o.reply[:400]}
            for o in outcomes
        ]
        state.result.context["grade"] = best.grade.name.lower() if best is not None else "failed"
        if best is not None and best.grade >= Grade.DOUBTFUL:
            if best.answer is None and best.result is not None:
                best.answer = self._answer_from_rows(
                    state, question, best.ran or best.cypher, best.result, answer_type
                )
            if best.notes:
                state.result.context.setdefault("rewrites", []).extend(best.notes)
            if best.result is not None and not best.result.rows:
                state.result.context["not_found"] = True
            if best.answer is not None:
                self._accept(state, best.answer)
                return
        if self.config.auto_repair and self.config.mode != "feedforward":
            self._answer_by_example(state, question, answer_type, links, examples)
        if state.result.answer is None:
            state.result.error = state.result.error or "no query ran: " + (
                state.result.tools[-1].error
                if state.result.tools and state.result.tools[-1].error
                else "the model wrote no query"
            )

    def measure_forms(self) -> MeasureForms:
        if self._forms is None:
            self._forms = MeasureForms(self.store, self.words)
        return self._forms

    def _form_applies(
        self,
        on: bool,
        shape: Callable[[str], bool],
        outcomes: Sequence[Outcome],
        examples: Sequence[CypherExample],
    ) -> bool:
        """Whether a typed form may answer: it is ``on`` (agentic only), and the model's first queries or the
        nearest worked example have its ``shape`` (read off the queries, not the question)."""
        if not on or self.config.mode == "feedforward":
            return False
        return any(shape(o.cypher) for o in outcomes) or bool(examples and shape(examples[0].cypher))

    def _measures(self, outcomes: Sequence[Outcome], examples: Sequence[CypherExample]) -> bool:
        """Whether the distance form may answer: its queries measure a distance."""
        return self._form_applies(self.config.measure_form, measures_distance, outcomes, examples)

    def compare_forms(self) -> CompareForms:
        if self._compare_forms is None:
            self._compare_forms = CompareForms(self.measure_forms(), self.words)
        return self._compare_forms

    def _compares(
        self,
        outcomes: Sequence[Outcome],
        examples: Sequence[CypherExample],
        links: Sequence[Link] = (),
        question: str = "",
    ) -> bool:
        """Whether the compare form may answer: its queries compare two values, or the question names two
        nodes (by symbol, or by a class with one member) and a query ranks down to one without naming them
        both (it ranked a whole class instead), or no query holds up and the question offers two named nodes
        as alternatives (:meth:`_offered`). Never where a query that holds up answers with other nodes
        than those two: the question asks something else than which of them ("which rooms touch both R3 and
        R4"), and the form can only answer one of the two."""
        literals = _naming_literals(links)
        named = set(literals.values())
        if named and any(
            o.ok and _symbols_of(o.answer) and not set(_symbols_of(o.answer)) & named for o in outcomes
        ):
            return False
        if self._form_applies(self.config.compare_form, compares_two, outcomes, examples):
            return True
        if (
            question
            and self._offered(question, links)
            and not any(o.ok for o in outcomes)
            and self._form_applies(self.config.compare_form, lambda _: True, outcomes, [])
        ):
            return True

        def names(query: str, symbol: str) -> bool:
            return any(re.search(rf"'{re.escape(lit)}'", query) for lit, s in literals.items() if s == symbol)

        return len(named) == 2 and self._form_applies(
            self.config.compare_form,
            lambda q: ranks_to_one(q) and not all(names(q, s) for s in named),
            outcomes,
            [],
        )

    def _fill_form(self, state: RunState, system: str, user: str, grammar: str, key: str) -> str:
        """One short greedy reply under a form's ``grammar`` (where the model takes one); its time and reply
        are kept under ``key`` in the run's context."""
        mark = time.perf_counter()
        resp = self.model.chat(
            [Message.system(system), Message.user(user)],
            max_tokens=80,
            stop=["\n"],
            temperature=0.0,
            seed=0,
            grammar=grammar if getattr(self.model, "supports_grammar", False) else None,
        )
        state.add_usage(resp.usage)
        timings = state.result.context.setdefault("timings_s", {})
        timings[key] = time.perf_counter() - mark
        reply = resp.message.content.strip()
        state.result.context[key] = reply
        return reply

    def _answer_by_compare(
        self, state: RunState, question: str, answer_type: str | None, links: Sequence[Link]
    ) -> Outcome | None:
        """The model fills the compare form (one short call under its grammar) and the query built from it is
        checked, run and graded like any candidate; None when the model says nothing is compared, or the form
        names what the graph lacks."""
        forms = self.compare_forms()
        self.progress.stage("compare", "the query compares two things: filling the compare form")
        reply = self._fill_form(
            state, forms.system, forms.user(question, links), forms.grammar.text, "compare"
        )
        form = parse_compare(reply)
        if form is not None:
            form = as_asked(form, self._asks_whether(question), answer_type == "number")
            form = self._offered_sides(form, question, links)
            form = in_direction(form, question, self.words)
            form = self._apposed_sides(form, question)
        cypher = forms.compile(form) if form is not None else None
        if form is None or cypher is None:
            return None
        outcome = self._evaluate(state, reply, cypher, question, answer_type, links)
        outcome.notes.append(f"built from the compare form: {form.render()}")
        return outcome

    def _offered(self, question: str, links: Sequence[Link]) -> tuple[str, str] | None:
        """The two things the question offers as alternatives, in its order: named nodes (a symbol, or a
        class with one member; as the symbol) or two classes of one layer (as the classes), their mentions at
        most three words apart with one of the language's ``alternative_words`` between ("hallway R2 *or*
        hallway R5", "the food (O8) *or* to the bed (O275)", "more trash *or* more boxes")."""
        spans = sorted(
            (start, end, value, link.label)
            for link in links
            if link.seen and link.key in (ont.SYMBOL_KEY, ont.CLASS_KEY)
            for value in [_named_value(link)]
            for mention in link.mentions
            for start, end in self.words.said_spans(question, [mention])
        )
        for (_, end, a, la), (start, _, b, lb) in itertools.pairwise(spans):
            gap = question[end:start]
            if (
                a != b
                and ont.has_symbol_shape(a) == ont.has_symbol_shape(b)
                and (ont.has_symbol_shape(a) or la == lb)  # two named nodes, or two classes of one layer
                and len(re.findall(r"\w+", gap)) <= 3
                and self.words.says(gap, self.words.alternative_words)
            ):
                return a, b
        return None

    def _offered_sides(self, form: CompareForm, question: str, links: Sequence[Link]) -> CompareForm:
        """``form`` comparing the two nodes the question offers as alternatives (:meth:`_offered`) where it
        compares others: a distance then measured from the one other node the question names ("what's
        closer to the bag, the bed or O237": the bed and O237, from the bag)."""
        offered = self._offered(question, links)
        if offered is None:
            return form
        literals = {k.lower(): v for k, v in _naming_literals(links).items()}

        def symbol(side: str) -> str | None:
            if ont.has_symbol_shape(side):
                return side.upper()
            said = side.lower().replace("_", " ")
            return literals.get(said) or next((o for o in offered if o.lower() == side.lower()), None)

        if {symbol(form.first), symbol(form.second)} == set(offered):
            return form
        measure = form.measure
        if measure.lower().startswith("distance"):
            others = set(literals.values()) - set(offered)
            if len(others) != 1:
                return form
            measure = f"distance {others.pop()}"
        return dataclasses.replace(form, first=offered[0], second=offered[1], measure=measure)

    def _apposed_sides(self, form: CompareForm, question: str) -> CompareForm:
        """``form`` with a side given as a class the question says right before one of its symbols ("the
        lounge or hallway R5": ``with: hallway`` -> ``R5``) given as that symbol."""
        sides = {}
        for key in ("first", "second"):
            side = getattr(form, key)
            if ont.has_symbol_shape(side):
                continue
            for m in re.finditer(
                rf"\b{re.escape(side.replace('_', ' '))}\s+([A-Za-z]{{1,2}}\d+)\b", question, re.I
            ):
                symbol = m.group(1).upper()
                if symbol not in (form.first, form.second) and (self.linker().class_of(symbol) or "") == side:
                    sides[key] = symbol
                    break
        return dataclasses.replace(form, **sides) if sides else form

    def _asks_whether(self, question: str) -> bool:
        """Whether ``question`` asks yes or no rather than which of two (by the language's words): it names
        both answers, or it opens as a yes/no question and offers no alternative ("Is the bed or the bike
        taller?" asks which)."""
        words = self.words
        if all(words.has_any(question, [w]) for w in words.yes_no_answer):
            return True
        return words.is_yes_no(question) and not words.says(question, words.alternative_words)

    def _answer_by_form(
        self, state: RunState, question: str, answer_type: str | None, links: Sequence[Link]
    ) -> Outcome | None:
        """The model fills the distance form (one short call under the form's grammar) and the query built
        from it is checked, run and graded like any candidate; None when the model says the question measures
        no distance, or the form names what the graph lacks."""
        forms = self.measure_forms()
        self.progress.stage("form", "the first query did not hold up: filling the distance form")
        reply = self._fill_form(state, forms.system, forms.user(question, links), forms.grammar.text, "form")
        form = parse_form(reply)
        if form is None:
            return None
        # "trash can O30": measured from the node the question names, not from every node of its class
        named = [
            link.value
            for link in links
            if link.key == ont.SYMBOL_KEY and form.ref.lower() in self._own_classes(link.value)
        ]
        if len(named) == 1:
            form = dataclasses.replace(form, ref=named[0])
        if (
            form.cls != ANY
            and self._own_classes(form.ref) == {form.cls.lower()}
            and self._only_member(form.ref)
        ):
            # "what is closest to the bicycle", the only bicycle: other nodes of any class, not other bicycles
            form = dataclasses.replace(form, cls=ANY)
        said = {link.value.lower() for link in links if link.key == ont.CLASS_KEY}
        if form.cls != ANY and form.cls.lower() not in said:
            # "what object is sitting closest to my bag": a class the question never names is no filter
            form = dataclasses.replace(form, cls=ANY)
        cypher = forms.compile(form, ordered=answer_type == "list")
        if cypher is None:
            return None
        outcome = self._evaluate(state, reply, cypher, question, answer_type, links)
        outcome.notes.append(f"built from the distance form: {form.render()}")
        return outcome

    def _answer_by_plan(self, state: RunState, question: str, answer_type: str | None) -> bool:
        """Try the model's plan (after a first round with no good candidate); True when its answer holds up
        (then it is the answer: ``state.hints["planned"]``)."""
        earlier: list[AgentResult] = []
        state.hints["earlier"] = earlier
        planned = self._run_planned(question, answer_type, earlier)
        if planned is not None and planned.context.get("grade") == Grade.OK.name.lower():
            state.hints["planned"] = planned
            return True
        if planned is not None:
            earlier.append(planned)
        # what the plan spent counts toward this question's run
        for spent in earlier:
            state.result.usage = state.result.usage + spent.usage
            state.result.llm_calls += spent.llm_calls
            state.result.tools.extend(spent.tools)
        state.result.context["plan_tried"] = [e.context.get("plan") for e in earlier if "plan" in e.context]
        state.hints["earlier"] = []
        return False

    def _evaluate_replies(
        self,
        state: RunState,
        replies: Sequence[str],
        question: str,
        answer_type: str | None,
        links: Sequence[Link],
        seen: dict[str, Outcome],
        flagged: set[str],
    ) -> list[Outcome]:
        """Each reply's outcome (a query seen before in this question is not run again)."""
        out = []
        for reply in replies:
            draft = parse_reply(reply, "qa")
            key = _normalized(draft.cypher)
            known = seen.get(key) if key else None
            if known is not None:
                outcome = Outcome(
                    reply,
                    known.cypher,
                    known.ran,
                    known.result,
                    known.answer,
                    known.grade,
                    known.problem,
                    list(known.notes),
                )
            else:
                outcome = self._evaluate(state, reply, draft.cypher, question, answer_type, links)
                if key:
                    seen[key] = outcome
            if key not in flagged and outcome.grade in (Grade.EMPTY, Grade.DOUBTFUL):
                # found nothing with a class the question never names: run without it at once
                unasked = self._without_unasked_class(
                    state, reply, outcome, question, answer_type, links, empty_only=True
                )
                if unasked is not None:
                    out.append(unasked)
                    continue
            if (
                key in flagged
                and outcome.grade in (Grade.EMPTY, Grade.DOUBTFUL)
                and state.hints.get("insist", True)
            ):
                unasked = self._without_unasked_class(state, reply, outcome, question, answer_type, links)
                if unasked is not None:
                    out.append(unasked)
                    continue
                outcome.grade, outcome.problem = Grade.OK, None
                outcome.notes.append(
                    "kept: the model wrote the same query again after being told why it was doubted"
                )
            out.append(outcome)
        return out

    def _without_unasked_class(
        self,
        state: RunState,
        reply: str,
        outcome: Outcome,
        question: str,
        answer_type: str | None,
        links: Sequence[Link],
        *,
        empty_only: bool = False,
    ) -> Outcome | None:
        """A query written again after it was doubted for filtering on a class the question never names, run
        without that filter, where the worked examples shown to the model hold the class (it was copied from
        an example) or the query found nothing with it (``empty_only``: only then, for a query written the
        first time); the new outcome when it holds up (graded OK), else None (the model's query is kept)."""
        invented = [
            v.strip("'") for v in self._invented(outcome.cypher, links, question) if v.startswith("'")
        ]
        # a filter the worked examples shown to the model hold was copied; one the model insists on from
        # elsewhere may know what the question leaves unsaid ("those rooms"), unless it empties the answer
        shown = state.messages[1].content if len(state.messages) > 1 else ""
        # found nothing (not a yes/no question: there "no" may be the answer)
        yes_no = answer_type in (None, "string") and self.words.is_yes_no(question)
        no_rows = outcome.result is not None and not outcome.result.rows
        empty = (outcome.grade == Grade.EMPTY or no_rows) and not yes_no
        if empty_only and not (no_rows and not yes_no):
            return None  # at once only for no rows at all (a count of 0 may be wrong in more ways)
        classes = [v for v in invented if not ont.has_symbol_shape(v) and (empty or f"'{v}'" in shown)]
        if no_rows and not yes_no:  # a scope no node can be ("on this floor" as a Room of class 'floor')
            classes += [v for _, v, _ in self._unsaid_scopes(outcome.cypher, question) if v not in classes]
        if not classes:
            return None
        query, notes = drop_class_filter(outcome.cypher, classes)
        if not notes:
            return None
        dropped = self._evaluate(state, reply, query, question, answer_type, links)
        if dropped.grade != Grade.OK:
            return None
        dropped.notes = [*notes, *dropped.notes]
        return dropped

    def _evaluate(
        self,
        state: RunState,
        reply: str,
        cypher: str,
        question: str,
        answer_type: str | None,
        links: Sequence[Link],
    ) -> Outcome:
        """Repair, check, run, format and grade one candidate query."""
        outcome = Outcome(reply, cypher)
        if not cypher:
            outcome.problem = "Reply with a Cypher query only."
            return outcome
        query, notes = self._linked_values(cypher, links)
        if self.config.auto_repair:
            query, more = center_arguments(query)
            notes += more
            query, more = pin_named_member(query, self._named_members(links))
            notes += more
            if answer_type == "dict":
                query, more = group_by_the_other_node(query)
                notes += more
            if answer_type == "string":  # one name; a set or list may be of positions
                query, more = symbol_for_position(query)
                notes += more
            if answer_type in (None, "dict"):
                query, more = count_every_group(query)
                notes += more
            query, more = one_hop(query, self._connection(question, links))
            notes += more
            named_labels = self._named_labels(question, links)
            query, more = drop_unnamed_container(query, named_labels, self.store.schema())
            notes += more
            query, more = unjoin_measured_pair(query, named_labels)
            notes += more
            query, more = self._drop_apposed_classes(query, question, links)
            notes += more
            query, more = self._held_by_the_room_said_first(query, question, links)
            notes += more
        outcome.notes = notes
        result, problem, ran = self._execute(state, query, notes)
        outcome.ran = ran
        if result is None:
            outcome.problem = problem
            return outcome
        outcome.result = result
        yes_no = answer_type in (None, "string") and self.words.is_yes_no(question)
        if not result.rows:
            counts = answer_type == "number" and zero_when_nothing_matches(ran or query)
            outcome.answer = self.words.yes_no(False) if yes_no else ("0" if counts else NOT_FOUND)
            doubts = self._doubts(ran or query, question, links, None)
            # an absent class the question never says as one ("on this floor": no Room is a floor) is a
            # scope the query made up, not the answer "none"
            scoped = any(kind == "scope" for kind, _ in doubts)
            if not scoped and self._names_absent_value(ran or query, links):
                outcome.grade = Grade.OK  # it asked for something the graph does not hold: a true "not found"
            elif doubts:
                outcome.grade, outcome.problem = Grade.DOUBTFUL, " ".join(text for _, text in doubts)
                outcome.structural = False
            elif yes_no:
                outcome.grade = Grade.OK  # nothing matches "Are A and B connected?": no
            else:
                outcome.grade = Grade.EMPTY
                outcome.problem = self._empty_diagnosis(ran or query, links)
            return outcome
        mismatch = shape_mismatch(result, answer_type)
        outcome.answer = self._format(result, ran or query, question, answer_type)
        if outcome.answer and (said := self._as_offered(outcome.answer, question)) is not None:
            outcome.notes.append(
                f"{outcome.answer} is a {said}, and the question asks to answer in those words"
            )
            outcome.answer = said
        if outcome.answer and outcome.answer.startswith("["):
            outcome.answer, more = self._route_from_start(outcome.answer, question, links)
            outcome.notes += more
            outcome.answer, more = self._between_named_ends(outcome.answer, question, links, answer_type)
            outcome.notes += more
        if (
            yes_no
            and not mismatch
            and _symbols_only(result)
            and not self.words.says(question, self.words.alternative_words)  # "Is R1 a hallway or a lounge?"
        ):
            # nodes for "is there a bed anywhere?": something matched, as no rows would say "no"
            outcome.answer = self.words.yes_no(True)
            outcome.notes.append("a yes/no question answered by nodes: they exist, so yes")
        if mismatch and answer_type == "string" and yes_no:
            mismatch = _YES_NO_KIND  # "string" also holds true/false: the names it suggests are no answer
        if mismatch:
            outcome.grade, outcome.problem = Grade.DOUBTFUL, mismatch  # never the asked kind: structural
            return outcome
        if _counted_nothing(result, ran or query) and not self._names_absent_value(ran or query, links):
            # a count of 0 over values that exist is an empty match in disguise
            outcome.grade = Grade.EMPTY
            outcome.problem = self._empty_diagnosis(ran or query, links).replace(
                "returned no rows", "counted 0"
            )
            return outcome
        doubts = self._doubts(ran or query, question, links, outcome.answer)
        idle = self._idle_ranking(ran or query)
        if idle:
            doubts.append(("ranking", idle))
        if doubts:
            outcome.grade, outcome.problem = Grade.DOUBTFUL, " ".join(text for _, text in doubts)
            outcome.structural = any(kind in ("layer", "echo", "unused", "unrelated") for kind, _ in doubts)
        else:
            outcome.grade = Grade.OK
        return outcome

    def _format(self, result: QueryResult, query: str, question: str, answer_type: str | None) -> str | None:
        """The SLDP answer the rows of ``query`` give (None when their shape says nothing, or its values
        cannot be written as SLDP)."""
        try:
            return format_rows(
                result.columns,
                result.rows,
                query=query,
                question=question,
                answer_type=answer_type,
                words=self.words,
            )
        except SldpFormatError:
            return None

    def _doubts(
        self, query: str, question: str, links: Sequence[Link], answer: str | None
    ) -> list[tuple[str, str]]:
        """Why a query that ran may not answer ``question`` (empty when nothing speaks against it), each as
        (kind, text for the model): it ignores something the question names (``unused``), filters on things
        the question never names (``invented``), answers with nodes of another layer than asked (``layer``),
        or with the one node the question names (``echo``), or leaves out a number the question states
        (``number``), or negates nothing where the question does (``negation``)."""
        doubts = []
        unused = [link for link in unused_links(query, links) if not self._locates_named(link, query)]
        if unused:
            doubts.append(
                (
                    "unused",
                    "The question mentions "
                    + "; ".join(link.describe() for link in unused)
                    + ", but the query does not use it.",
                )
            )
        if not self._names_absent_value(query, links):
            invented = self._invented(query, links, question)
            if invented:
                doubts.append(
                    (
                        "invented",
                        f"The question does not name {', '.join(invented)}: do not filter on "
                        f"{'it' if len(invented) == 1 else 'them'}.",
                    )
                )
        # a class the question names that no node has is an answer ("chairs in the kitchen": none); a
        # layer's own word ("on this floor") names no class
        for label, value, classes in self._unsaid_scopes(query, question):
            doubts.append(
                (
                    "scope",
                    f"No {label} has class '{value}' (its classes: {', '.join(classes[:12])}), so the "
                    "query finds nothing inside it: match what the question names, or drop that node.",
                )
            )
        wrong = self._wrong_layer(question, links, answer) or self._counted_other_layer(
            query, question, links
        )
        if wrong:
            doubts.append(("layer", wrong))
        superlative = self.words.says(question, self.words.distance_superlatives)
        if superlative and not re.search(r"\b(?:distance|sqrt|shortestPath|length)\s*\(", query, re.I):
            doubts.append(
                (
                    "ranking",
                    f"The question says {superlative[0]!r}, but the query measures no distance: rank by "
                    "point.distance(a.center, b.center) and keep the first.",
                )
            )
        if answer is not None:
            numbers = unused_numbers(query, question, links)
            if numbers:
                doubts.append(
                    (
                        "number",
                        f"The question says {self.words.join(numbers)}, but the query does not use "
                        f"{'it' if len(numbers) == 1 else 'them'}.",
                    )
                )
        negated = self.words.negations(question)
        if negated and not _NEGATES.search(query):
            doubts.append(
                (
                    "negation",
                    f"The question says {negated[0]!r}, but the query negates nothing (NOT, <>, = 0, IS NULL).",
                )
            )
        elif (
            not negated
            and _NEGATES_PATTERN.search(query)
            and not self.words.says(question, self.words.exclusion_words)
        ):
            doubts.append(
                (
                    "negation",
                    "The question asks for what is so, but the query asks for a pattern NOT to hold: drop the NOT.",
                )
            )
        if (
            answer is not None
            and re.fullmatch(r"-?\d+(?:\.\d+)?", answer.strip())
            and not re.search(r"\bcount\s*\(", query, re.I)
            and self.words.is_yes_no(question)
        ):
            doubts.append(("kind", _YES_NO_KIND))
        if (
            answer is not None
            and not _symbols_of(answer)
            and not answer.lstrip().startswith(("{", "POINT"))
            and self._asks_ids(question)
        ):
            doubts.append(
                (
                    "kind",
                    f"The question asks for node ids, but the query returned {answer[:40]}: return the "
                    f"{ont.SYMBOL_KEY} of the node(s) it asks for.",
                )
            )
        if answer is not None and _symbols_of(answer) and self._asks_kind(question):
            doubts.append(
                (
                    "kind",
                    "The question asks what kind of thing it is: return its class (x.class), not its symbol.",
                )
            )
        if answer is not None and counts_pinned_ends(query):
            doubts.append(("kind", _PINNED_ENDS_COUNTED))
        connection = self._connection(question, links)
        if connection is not None and not re.search(rf"\b{connection[2]}\b", query):
            words, label, edge = connection
            doubts.append(
                (
                    "connection",
                    f"The question says {words[0]!r}, but the query follows no {edge} edge: match "
                    f"(a:{label})-[:{edge}]-(b:{label}) for the {ont.layer_name(label).replace('_', ' ')} "
                    "nodes connected to it.",
                )
            )
        other_kinds = self._kinds_of_other_layer(query, question) if answer is not None else None
        if other_kinds:
            doubts.append(("layer", other_kinds))
        classes_for = self._classes_for_nodes(query, question, answer)
        if classes_for:
            doubts.append(
                (
                    "kind",
                    f"The question asks which {ont.layer_name(classes_for[1]).replace('_', ' ')} nodes, not "
                    f"their kinds: return {classes_for[0]}.{ont.SYMBOL_KEY}, not {classes_for[0]}.class.",
                )
            )
        other_classes = self._classes_of_other_layer(query, question, links, answer)
        if other_classes:
            doubts.append(("layer", other_classes))
        loose = unrelated_nodes(query) if answer is not None else []
        if loose:
            doubts.append(
                (
                    "unrelated",
                    f"The query matches {', '.join(loose)} but never relates "
                    f"{'it' if len(loose) == 1 else 'them'} to what it returns: say how they relate (a path, "
                    "containment, a distance).",
                )
            )
        named = _named_nodes(links)
        if (
            answer is not None
            and answer.strip().lower() in ("true", "false")
            and self._asks_a_thing(question)
        ):
            pair = list(named)
            choice = (
                f" (which of {self.words.join(pair)}: CASE WHEN ... THEN '{pair[0]}' ELSE '{pair[1]}' END)"
                if len(pair) == 2
                else ""
            )
            doubts.append(
                ("kind", f"The question asks for a thing or a value, not yes or no: return it{choice}.")
            )
        if answer is not None and len(named) == 1 and answer.strip("<>[] ") in named:
            symbol, said = next(iter(named.items()))
            doubts.append(
                (
                    "echo",
                    f"It returned {said}, the node the question names itself: return what the question asks "
                    f"about {symbol}.",
                )
            )
        return doubts

    def _kinds_of_other_layer(self, query: str, question: str) -> str | None:
        """Why the classes ``query`` returns are of another layer than the kinds the question asks for ("what
        kinds of objects are in the places next to …" answered with the places' class); None when they are
        not, or it is unclear."""
        asked = self._asked_label(question, (), self.words.kind_words)  # a layer word after "kinds (of)"
        given = _returned_class_labels(query) if asked is not None else set()
        if not given or asked in given:
            return None
        return (
            f"The question asks what kinds of {ont.layer_name(asked).replace('_', ' ')} nodes, but the query "
            f"returns the class of {', '.join(sorted(given))} nodes: return the class of the {asked} nodes."
        )

    def _classes_for_nodes(self, query: str, question: str, answer: str | None) -> tuple[str, str] | None:
        """``(variable, label)`` where the question asks "which <layer word>" (no kind word anywhere in it)
        and the query returns only that layer's classes (``RETURN DISTINCT o.class`` for "Which objects are
        in R4?"); None otherwise."""
        if answer is None or _symbols_of(answer) or self.words.says(question, self.words.kind_words):
            return None
        label = self._asked_label(question, ())  # a layer word only: "which furniture" may ask for kinds
        m = re.fullmatch(
            r"RETURN\s+(?:DISTINCT\s+)?(?:collect\s*\(\s*(?:DISTINCT\s+)?)?([A-Za-z_]\w*)\.class\s*\)?"
            r"(?:\s+AS\s+\w+)?\s*;?",
            return_clause(query).strip(),
            re.I,
        )
        if label is None or m is None or label not in var_labels(query).get(m.group(1), set()):
            return None
        return m.group(1), label

    def _classes_of_other_layer(
        self, query: str, question: str, links: Sequence[Link], answer: str | None
    ) -> str | None:
        """Why ``query`` answers a "which <layer>" question with the classes of nodes of another layer ("what
        room is O95 part of" answered with O95's class); None when it does not, or it is unclear."""
        if answer is None or _symbols_of(answer):
            return None
        asked = self._asks_which_node(question, links, None)
        given = _returned_class_labels(query) if asked is not None else set()
        if not given or asked in given:
            return None
        layer = ont.layer_name(asked).replace("_", " ")
        return (
            f"The question asks which {layer} nodes, but the query returns the class of "
            f"{', '.join(sorted(given))} nodes: return the {asked} nodes' {ont.SYMBOL_KEY}."
        )

    def _asks_ids(self, question: str) -> bool:
        """Whether ``question`` asks for nodes by their ids: it says one of ``id_words`` not naming a node
        ("answer with the id", not "the object with id O12"), and it counts nothing and asks no yes/no."""
        spans = self.words.said_spans(question, self.words.id_words)
        return (
            any(not ont.SYMBOL_IN_TEXT.match(question[end:].lstrip()) for _, end in spans)
            and not self.words.says(question, self.words.count_words)
            and not self.words.is_yes_no(question)
        )

    def _asks_kind(self, question: str) -> bool:
        """Whether ``question`` asks for a class: a ``kind_words`` word in the phrase its first question word
        opens ("what sort of thing is closest to the bike", "what's the most common object class in R1"), or
        within three words after one of ``reply_words`` ("answer with the class name")."""
        if any(w in self.words.kind_words for w in self.words.asked_phrase(question)):
            return True
        return any(
            w.strip(".,?!:;").lower() in self.words.kind_words
            for _, end in self.words.said_spans(question, self.words.reply_words)
            for w in question[end:].split()[:3]
        )

    def _idle_ranking(self, query: str) -> str | None:
        """Why an ``ORDER BY ... LIMIT n`` of ``query`` chooses nothing (None when it does, or it cannot be
        told): what it ranks has at most ``n`` distinct values, so the question's superlative decided
        nothing ("the object farthest from the food" ranking the food). One count query, read off the
        graph."""
        if re.search(r"\bUNION\b|\bCALL\s*\{", query, re.I):
            return None
        counted = ranked_count_query(query)
        if counted is None:
            return None
        count_query, limit = counted
        try:
            rows = self.store.query(count_query, read_only=True, timeout_s=self.config.query_timeout_s).rows
        except SceneRagError:
            return None
        found = rows[0].get("n") if rows else None
        if not isinstance(found, int) or found > limit:
            return None
        return (
            f"Its ORDER BY ... LIMIT {limit} chooses nothing: the query ranks only {found} candidate"
            f"{'' if found == 1 else 's'}. Rank every node the question compares (not the one it measures "
            "from), then take the first."
        )

    def _locates_named(self, link: Link, query: str) -> bool:
        """Whether ``link`` only says where a node the query names by symbol is ("P1396 in the lounge": the
        lounge holds P1396): such a mention need not be in the query. Read off the graph, not the wording."""
        outer = [link.value] if link.key == ont.SYMBOL_KEY else list(link.symbols)
        named = [s for s in dict.fromkeys(re.findall(r"'([A-Za-z]{1,2}\d+)'", query)) if s not in outer]
        if not outer or not named:
            return False
        rows = self.store.query(
            f"MATCH (a)-[:{ont.CONTAINS}*]->(b) WHERE (a.{ont.SYMBOL_KEY} IN $outer AND b.{ont.SYMBOL_KEY} IN "
            f"$named) OR (a.{ont.SYMBOL_KEY} IN $named AND b.{ont.SYMBOL_KEY} IN $outer) RETURN count(*) AS n",
            {"outer": outer, "named": named},
        ).rows
        return bool(rows and rows[0].get("n"))

    def _linked_values(self, cypher: str, links: Sequence[Link]) -> tuple[str, list[str]]:
        """``cypher`` with the question's words used as values (``{nodeSymbol: 'upstairs'}``) replaced by
        what they were linked to (see :func:`repair_mentions`), and a variable named as a class the question
        names but never bound made a node of that class (:func:`bind_named_classes`)."""
        if not self.config.auto_repair:
            return cypher, []
        mentions = {
            form: (link.label, link.key, link.value)
            for link in links
            for mention in link.mentions
            for form in self.words.word_forms(mention.lower())
            if form != link.value.lower()
        }
        query, notes = repair_mentions(cypher, mentions, self.store.schema())
        classes = {
            form: (link.label, link.value)
            for link in links
            if link.key == ont.CLASS_KEY
            for said in (*link.mentions, link.value)
            for form in self.words.word_forms(said.lower())
        }
        query, more = bind_named_classes(query, classes)
        return query, notes + more

    def _execute(
        self, state: RunState, cypher: str, notes: list[str] | None = None
    ) -> tuple[QueryResult | None, str | None, str | None]:
        """Check, repair and run ``cypher``: ``(result, None, ran)`` or ``(None, problem for the model, ran)``;
        the repairs' notes are added to ``notes``."""
        notes = notes if notes is not None else []
        schema = self.store.schema()
        query = cypher
        if self.config.auto_repair:
            for repair in (
                mend_sql_aggregation,
                count_per_group_again,
                unname_predicate_nodes,
                either_symbol,
                close_open_subqueries,
                split_subquery_arithmetic,
                merge_union_by_symbol,
                inline_patterns,
                bind_path_variable,
                drop_idle_with,
                carry_dropped_nodes,
                drop_contradicted_leg,
            ):
                query, more = repair(query)
                notes += more
            query, more = symbols_as_nodes(query, self._symbol_labels(query).get)
            notes += more
            query, more = repair_symbol_layers(query, self._symbol_labels(query), schema)
            notes += more
            query, more = drop_contradicted_class(query, self._own_classes)
            notes += more
            query, more = holder_classes(query, schema)
            notes += more
        checked = check_cypher(query, schema)
        ran = checked.query
        notes += list(checked.rewrites)
        if self.config.auto_repair:
            ran, more = repair_query(ran, schema)
            notes += more
            ran, more = repair_node_operators(ran, schema)
            notes += more
            singles = self.linker().singletons() if self.config.link_entities else {}
            for repair in (
                carry_dropped_variables,
                count_none_optionally,
                drop_return_trip,
                functools.partial(unpin_twice_named, singletons=singles),
                widen_shortest_paths,
                length_of_one_shortest_path,
                others_for_self_distance,
                exclude_the_reference,
                contents_of_the_neighbour,
            ):
                ran, more = repair(ran)
                notes += more
            if self.config.link_entities:
                ran, more = return_the_neighbour(ran, singles)
                notes += more
                ran, more = drop_idle_sibling(ran, self.linker().class_of)
                notes += more
        rewritten = ran if ran != cypher else None
        if not checked.ok:
            error = "; ".join(checked.problems)
            state.result.tools.append(ToolRecord("cypher_query", cypher, False, error=error, ran=rewritten))
            return None, f"That query cannot work: {error}.", ran
        try:
            self.progress.stage("running query")
            result = self.store.query(
                ran, read_only=True, timeout_s=self.config.query_timeout_s, max_rows=self.config.max_rows
            )
        except SceneRagError as exc:
            state.result.tools.append(
                ToolRecord("cypher_query", cypher, False, error=str(exc), ran=rewritten)
            )
            return None, f"That query failed: {str(exc).splitlines()[0]}", ran
        state.result.tools.append(ran_record(cypher, result, ran=rewritten))
        return result, None, ran

    def _invented(self, query: str, links: Sequence[Link], question: str) -> list[str]:
        """Symbols and classes the query filters on that the question never mentioned (a filter copied from
        an example: "How many rooms are there?" answered for R1 only), and distance bounds it never gave."""
        invented = invented_symbols(query, links, question)
        schema = self.store.schema()
        linked = {link.value.lower() for link in links}
        for link in links:  # "the seat O55": O55's own class is no copy
            if link.key == ont.SYMBOL_KEY and (cls := self.linker().class_of(link.value)):
                linked.add(cls.lower())
        for value in dict.fromkeys(re.findall(r"'([^']*)'", query)):
            owner = schema.value_owner(value)
            if (
                owner is not None
                and owner[1] == ont.CLASS_KEY
                and value.lower() not in linked
                and not _value_said(value, question)
            ):
                invented.append(f"'{value}'")
        said = {float(n) for n in re.findall(r"\d+(?:\.\d+)?", question)}
        for m in _DISTANCE_BOUND.finditer(query):  # "within 2 m" copied into "How far apart are the lights?"
            if float(m.group(1)) not in said:
                invented.append(f"{m.group(1)} m")
        return invented

    def _between_named_ends(
        self, answer: str, question: str, links: Sequence[Link], answer_type: str | None
    ) -> tuple[str, list[str]]:
        """A route whose two ends are nodes the question names, for a question asking what lies on the way
        (``via_words``: "which room do I pass through going from the lounge to R3"), without its ends:
        ``[R1, R2, R3]`` -> ``R2``. ``(answer, notes)``; unchanged otherwise."""
        items = _route_between_named(answer, links)
        if (
            len(items) < 3
            or not self.words.says(question, self.words.via_words)
            or (answer_type == "list" and self.words.says(question, self.words.order_words))
        ):
            return answer, []
        inner = items[1:-1]
        if answer_type == "set":
            out = "<" + ", ".join(inner) + ">"
        elif len(inner) == 1 and answer_type != "list":
            out = inner[0]
        else:
            out = "[" + ", ".join(inner) + "]"
        return out, [f"the question asks what lies on the way: left out the ends {items[0]} and {items[-1]}"]

    def _asks_a_thing(self, question: str) -> bool:
        """Whether ``question`` opens with a word that asks for a thing or a value ("which", "how many") and
        is no yes/no question: true or false cannot answer it."""
        return (
            self.words.starts_with_any(question, self.words.asks_more)
            and not self.words.is_yes_no(question)
            and not self.words.says(question, self.words.answer_words)
        )

    def _route_from_start(self, answer: str, question: str, links: Sequence[Link]) -> tuple[str, list[str]]:
        """An ordered answer whose two ends are nodes the question names, listed from the one the question
        starts from: the one after a source word ("from the lounge to R3"), else the one it names first. A path
        found from its other end ([R3, R2, R1]) is turned round; ``(answer, notes)``."""
        items = _route_between_named(answer, links)
        if not items:
            return answer, []
        low = question.lower()

        def said_at(symbol: str) -> int | None:
            spots = [
                start
                for link in links
                if symbol == link.value or (link.key != ont.SYMBOL_KEY and link.symbols == (symbol,))
                for start, _ in self.words.said_spans(question, link.mentions)
            ]
            return min(spots) if spots else None

        first, last = said_at(items[0]), said_at(items[-1])
        if first is None or last is None:
            return answer, []
        sources = [end for _, end in self.words.said_spans(question, self.words.source_words)]

        def after_source(at: int) -> bool:
            return any(0 <= at - end <= 12 and len(low[end:at].split()) <= 1 for end in sources)

        starts_last = after_source(last) and not after_source(first)
        if not starts_last and (after_source(first) or first < last):
            return answer, []
        return "[" + ", ".join(reversed(items)) + "]", [
            f"listed the route from {items[-1]}, where the question starts it"
        ]

    def _named_labels(self, question: str, links: Sequence[Link]) -> set[str]:
        """The layers ``question`` names: by a linked class or symbol, or by a layer word ("room")."""
        named = {link.label for link in links}
        for word, labels in self.words.layer_words.items():
            if labels and self.words.says(question, [word]):
                named.update(labels)
        return named

    def _unsaid_scopes(self, query: str, question: str) -> list[tuple[str, str, list[str]]]:
        """The query's memberless scopes (``(label, value, that label's classes)``, see
        :func:`memberless_scopes`) whose class the question never says, a layer's own word not counting ("on
        this floor" names no class of Room)."""
        layers = {w for w in self.words.layer_words if " " not in w}
        return [
            scope
            for scope in memberless_scopes(query, self.store.schema())
            if not _value_said(scope[1], question, ignore=layers)
        ]

    def _names_absent_value(self, query: str, links: Sequence[Link] = ()) -> bool:
        """Whether the query filters on a value the graph does not hold (its answer is "not found" whatever
        else it copied), and uses every node the question names by symbol (a node the user typed exists: a
        query that leaves it out for an absent class, "the couch O98" as class 'couch', found nothing of it)."""
        schema = self.store.schema()
        if conflicting_filters(query):
            return False  # "storage AND furniture" for one node finds nothing whatever the graph holds
        if any(
            link.key == ont.SYMBOL_KEY and not self._locates_named(link, query)
            for link in unused_links(query, links)
        ):
            return False
        return any(
            schema.value_owner(v) is None and not is_symbol(v) for v in re.findall(r"'([^']*)'", query)
        )

    def _empty_diagnosis(self, query: str, links: Sequence[Link]) -> str:
        """Why an empty result is suspicious: every value the query names exists (and what the question
        named that the query left out)."""
        literals = re.findall(r"'([^']*)'", query)
        unused = [link for link in links if link.value not in literals]
        hint = ""
        if unused:
            hint = " The question mentions " + "; ".join(link.describe() for link in unused) + "."
        conflicts = conflicting_filters(query)
        if conflicts:
            return f"That query returned no rows: {'; '.join(conflicts)}, and a node has one value.{hint}"
        if counts_pinned_ends(query):
            return _PINNED_ENDS_COUNTED + hint
        return (
            "That query returned no rows, but what it asks for exists in the graph, so the pattern is "
            f"probably wrong (direction, hops, or a filter).{hint}"
        )

    def _asked_label(
        self, question: str, links: Sequence[Link], openers: Sequence[str] | None = None
    ) -> str | None:
        """The layer a "which <noun>" question asks for: a layer word or a linked class within three words
        after the language's first question word, or the first of ``openers`` ("how many"; ``Room`` for
        "Which hallway ..."); None when unclear."""
        m = self.words.find_any(question, self.words.which if openers is None else openers)
        if m is None:
            return None
        window = " ".join(question[m.end() :].split()[:3]).lower()
        for word, labels in sorted(self.words.layer_words.items(), key=lambda kv: -len(kv[0])):
            if labels and re.match(rf"(?:\w+\s+)?{re.escape(word)}s?\b", window):
                present = [lab for lab in labels if lab in self.store.schema().node_counts]
                return present[0] if present else None
        for link in links:
            if link.key != ont.SYMBOL_KEY and any(
                re.search(rf"\b{re.escape(m.lower())}\b", window) for m in link.mentions
            ):
                return link.label
        return None

    def _asks_which_node(self, question: str, links: Sequence[Link], answer_type: str | None) -> str | None:
        """The layer of the node a "which <noun>" question asks for, where it asks for a node: its question
        word comes before any of the language's ``count_words`` ("which hallway has the largest number of
        places", not "how many places are in the room which holds the bed"), and it asks no yes/no or kind;
        None otherwise."""
        if answer_type not in (None, "string") or self.words.is_yes_no(question) or self._asks_kind(question):
            return None
        opener = self.words.find_any(question, self.words.which)
        counted = self.words.find_any(question, self.words.count_words)
        if opener is None or (counted is not None and counted.start() < opener.start()):
            return None
        return self._asked_label(question, links)

    def _wrong_layer(self, question: str, links: Sequence[Link], answer: str | None) -> str | None:
        """Why ``answer``'s nodes are not of the layer the question asks for (None when they are, or it is
        unclear)."""
        if answer is None:
            return None
        label = self._asked_label(question, links)
        symbols = ont.SYMBOL_IN_TEXT.findall(answer)
        if label is None or not symbols:
            return None
        named = _named_nodes(links)
        if len(named) >= 2 and set(symbols) <= set(named):
            return None  # one of the nodes the question offers ("which has more seating, the lounge or R5")
        prefixes = self.linker().vocabulary().prefixes
        given = {prefixes.get(sym[0]) for sym in symbols}
        if label in given or None in given or len(given) != 1:
            return None
        other, layer = given.pop(), ont.layer_name(label).replace("_", " ")
        return (
            f"The question asks which {layer}, but the query returned {other} symbols ({', '.join(symbols[:3])}): "
            f"return the {label} nodes themselves (e.g. the {label} that CONTAINS or is linked to them)."
        )

    def _counted_other_layer(self, query: str, question: str, links: Sequence[Link]) -> str | None:
        """Why the count ``query`` returns is of another layer than the question counts ("How many objects
        are in the rooms next to R3?" answered by counting the rooms); None when it is, or it is unclear."""
        asked = self._asked_label(question, links, self.words.count_words)
        counted = re.findall(r"\bcount\s*\(\s*(?:DISTINCT\s+)?(\w+)\s*\)", return_clause(query), re.I)
        if asked is None or len(set(counted)) != 1:
            return None
        labels = var_labels(query).get(counted[0], set())
        if len(labels) != 1 or asked in labels:
            return None
        other = next(iter(labels))
        return (
            f"The question counts {ont.layer_name(asked).replace('_', ' ')} nodes, but the query counts "
            f"{counted[0]}, a {other}: count the {asked} nodes the question asks about."
        )

    def _symbol_labels(self, query: str) -> dict[str, str]:
        """The label of each node the query names by symbol (``{'O300': 'Object'}``; looked up once)."""
        known = self._labels_of_symbols
        named = list(dict.fromkeys(re.findall(r"'([A-Za-z]+\d+)'", query)))
        wanted = [s for s in named if s not in known]
        if wanted:
            rows = self.store.query(
                f"MATCH (n) WHERE n.{ont.SYMBOL_KEY} IN $s RETURN n.{ont.SYMBOL_KEY} AS s, labels(n) AS l",
                {"s": wanted},
            ).rows
            for row in rows:
                found = _labels(row.get("l"))
                if len(found) == 1:
                    known[str(row["s"])] = found[0]
        return {s: known[s] for s in named if s in known}

    def _answer_by_example(
        self,
        state: RunState,
        question: str,
        answer_type: str | None,
        links: Sequence[Link],
        examples: Sequence[CypherExample],
    ) -> None:
        """Last resort when no query of the model's ran: the nearest example whose values can be swapped for
        the question's (:func:`adapt_example`) runs instead; the first that returns rows of the asked shape and
        layer answers, and the answer says which example it came from."""
        for example in reversed(examples):  # most similar first
            query = adapt_example(example, links, question, self.linker().kind_of)
            if query is None:
                continue
            result, _, ran = self._execute(state, query)
            if result is None or not result.rows or shape_mismatch(result, answer_type):
                continue
            answer = self._format(result, ran or query, question, answer_type)
            if answer is not None and self._wrong_layer(question, links, answer) is None:
                state.result.context["from_example"] = example.question
                self._accept(state, answer)
                return

    def _answer_from_rows(
        self, state: RunState, question: str, cypher: str, result: QueryResult, answer_type: str | None
    ) -> str:
        """The LLM turns rows into the SLDP answer (only when their shape does not say it)."""
        hint = prompts.SLDP_TYPE_HINTS.get(answer_type or "", "")
        rows = summarize_rows(result, self.config.result_budget_tokens, self.model.count_tokens)
        messages = [
            Message.system("You answer a question from database rows.\n" + prompts.ANSWER_RULES_QA),
            Message.user(f"Question: {question}\nQuery: {cypher}\nRows:\n{rows}\n{hint}\nAnswer:"),
        ]
        resp = self.model.chat(messages, max_tokens=self.config.max_reply_tokens, stop=["\n\n"])
        state.add_usage(resp.usage)
        state.messages.extend([*messages, Message.assistant(resp.message.content)])
        return normalize_answer(resp.message.content, "qa")

    def _accept(self, state: RunState, answer: str) -> None:
        """Take ``answer``; a goal is taken only when it parses and every argument is a symbol of the graph
        (otherwise the run has no answer and its error says why)."""
        state.result.raw_answer = answer
        problems = sldp_problems(answer) if state.result.task == "qa" else self.grounder.problems(answer)
        state.result.error = "; ".join(problems) if problems else None
        state.result.answer = answer if state.result.task == "qa" or not problems else None

    # -- PDDL -------------------------------------------------------------------------------------------
    def _class_values(self, name: str) -> set[str]:
        """The class values ``name`` links to ("bike" -> {"bicycle"})."""
        return {link.value for link in self.linker().link(name) if link.key == ont.CLASS_KEY}

    def _describes_more(self, phrase: str, links: Sequence[Link]) -> bool:
        """Whether ``phrase`` says more than one class name ("box closest to the bag", "chair in R2"): any
        word left once the linked mention and the language's stop words are taken out, several links, or a
        description opener before the linked mention ("object closest to the bicycle")."""
        if len(links) > 1:
            return True
        if not links:
            return False
        # "object closest to the bicycle": a head (a layer word) related to what is linked after it
        mentions = [m for link in links for m in link.mentions]
        for _, end in self.words.said_spans(phrase, self.words.description_openers):
            if self.words.said_spans(phrase[end:], mentions):
                return True
        return bool(self._unlinked_words(phrase, links))

    def _unlinked_words(self, phrase: str, links: Sequence[Link], also: Sequence[str] = ()) -> list[str]:
        """The words of ``phrase`` left once the links' mentions, ``also`` and the stop words are out."""
        rest = phrase.lower()
        for mention in [m for link in links for m in link.mentions] + list(also):
            rest = re.sub(rf"\b{re.escape(mention.lower())}\b", " ", rest)
        return [w for w in re.findall(r"[a-z]+", rest) if w not in self.words.stop]

    def _own_classes(self, symbol: str) -> set[str]:
        """The class of the node ``symbol`` (lower-cased; empty when it has none)."""
        rows = self.store.query(
            f"MATCH (n) WHERE n.{ont.SYMBOL_KEY} = $s RETURN n.{ont.CLASS_KEY} AS c",
            {"s": symbol},
            max_rows=2,
        ).rows
        return {str(r["c"]).lower() for r in rows if r.get("c")}

    def _only_member(self, symbol: str) -> bool:
        """Whether the node ``symbol`` is the only node of its class."""
        rows = self.store.query(
            f"MATCH (n), (m) WHERE n.{ont.SYMBOL_KEY} = $s AND m.{ont.CLASS_KEY} = n.{ont.CLASS_KEY} "
            "RETURN count(DISTINCT m) AS k",
            {"s": symbol},
        ).rows
        return bool(rows) and rows[0].get("k") == 1

    def _named_members(self, links: Sequence[Link]) -> dict[str, str]:
        """Nodes the question names by symbol whose class it never names on its own: symbol -> class (read
        off the links and the graph)."""
        classes = {link.value.lower() for link in links if link.key == ont.CLASS_KEY}
        named = {}
        for link in links:
            if link.key == ont.SYMBOL_KEY:
                own = self._own_classes(link.value)
                if len(own) == 1 and not own & classes:
                    named[link.value] = next(iter(own))
        return named

    def _scoped_class(self, phrase: str, links: Sequence[Link]) -> list[str] | None:
        """The members of one class inside one node the phrase names by symbol ("chairs in hallway R5":
        the seating R5 holds, along CONTAINS), when the phrase says nothing else; None otherwise."""
        held = [link for link in links if link.key == ont.SYMBOL_KEY]
        if len(held) != 1:
            return None
        own = self._own_classes(held[0].value)
        others = [link for link in links if link is not held[0]]
        classes = [link for link in others if link.key == ont.CLASS_KEY and link.value.lower() not in own]
        # besides the node and the one class: only the node's own class ("chairs in hallway R5")
        if len(classes) != 1 or len(others) != 1 + sum(
            1 for link in others if link.key == ont.CLASS_KEY and link.value.lower() in own
        ):
            return None
        layers = sorted(self.words.layer_words, key=len, reverse=True)
        if self._unlinked_words(phrase, links, layers):
            return None
        return self._held_members([held[0].value], classes[0].value)

    def _named_node(self, phrase: str, links: Sequence[Link]) -> str | None:
        """The one node ``phrase`` names by its symbol, with at most its own class or layer beside it
        ("hallway R5", "mesh place P754"); None when the phrase says anything else."""
        named = [link for link in links if link.key == ont.SYMBOL_KEY]
        if len(named) != 1:
            return None
        symbol = named[0].value
        own = self._own_classes(symbol)
        if any(
            link is not named[0] and (link.key != ont.CLASS_KEY or link.value.lower() not in own)
            for link in links
        ):
            return None
        layers = sorted(self.words.layer_words, key=len, reverse=True)
        left = " ".join(self._unlinked_words(phrase, links, layers))
        if not left or left in {c.replace("_", " ") for c in own}:
            return symbol
        again = self.linker().link(left)  # "hallway R5": the class beside its own node is not linked there
        return symbol if again and all(link.value.lower() in own for link in again) else None

    def _classes_said(
        self, instruction: str, links: Sequence[Link], name: str, kind: str, state: RunState
    ) -> list[str]:
        """:meth:`_classes` of ``name``; when that finds nothing and the phrase scopes it to a node the
        instruction names neither by symbol nor by class ("[trash in R1]" of "every trash can on this
        floor"), the phrase without that scope (from the description opener before the symbol through the
        symbol), noted."""
        found = self._classes(name, kind)
        words = name.split()
        if found or not any(ont.has_symbol_shape(w) for w in words):
            return found
        said = {t.upper() for t in re.findall(r"[\w']+", instruction)}
        said |= {s.upper() for link in links for s in link.symbols}
        classes = {link.value.lower() for link in links if link.key == ont.CLASS_KEY}
        said |= {
            str(r["s"]).upper()
            for r in self.store.query(
                f"MATCH (n) WHERE n.{ont.CLASS_KEY} IN $c RETURN n.{ont.SYMBOL_KEY} AS s",
                {"c": list(classes)},
            ).rows
        }
        for i, word in enumerate(words):
            if not ont.has_symbol_shape(word) or word.upper() in said:
                continue
            opener = max(
                (j for j in range(i) if words[j].lower() in self.words.description_openers), default=None
            )
            if opener is None or opener == 0:
                return found
            rest = " ".join(words[:opener] + words[i + 1 :])
            note = f"[{name}] -> [{rest}]: the instruction never names {word}"
            state.result.context.setdefault("rewrites", []).append(note)
            return self._classes_said(instruction, links, rest, kind, state)
        return found

    def _classes(self, name: str, kind: str) -> list[str]:
        """Symbols of the nodes of ``kind`` that ``name`` describes: a class ("trash", "wastebin") gives its
        members; a longer description ("box closest to the bicycle") is answered by the QA pipeline."""
        spec = self.domain.kinds.get(kind)
        labels = spec.labels if spec is not None else ()
        phrase = name.strip()
        links = self.linker().link(phrase)
        named = self._named_node(phrase, links)
        if named is not None:
            return [named]
        scoped = self._scoped_class(phrase, links)
        if scoped is not None:
            return scoped
        if self._describes_more(phrase, links):
            found = self._resolve_phrase(phrase, kind, labels)
            if found or phrase not in self._widened:
                return found
            # a description the sketch did not write that finds nothing ("the box in R3" of "put the box in
            # R3" when R3 is no argument): the class the model wrote
            return self._classes(self._widened[phrase], kind)
        values = [phrase.lower().replace(" ", "_")]
        values += [link.value for link in links if link.key == ont.CLASS_KEY]
        other: list[str] = []
        for value in dict.fromkeys(values):
            rows = self.store.query(
                "MATCH (n) WHERE n.class = $c RETURN n.nodeSymbol AS s, labels(n) AS l ORDER BY s",
                {"c": value},
                max_rows=500,
            ).rows
            found = [str(r["s"]) for r in rows if not labels or set(_labels(r.get("l"))) & set(labels)]
            if found:
                return found
            other = other or [str(r["s"]) for r in rows if r.get("s")]
        return (
            other  # nodes of another kind: the sketch resolver retypes the predicate or moves along CONTAINS
        )

    def _resolve_phrase(self, phrase: str, kind: str, labels: Sequence[str]) -> list[str]:
        """Answer "Which <phrase>?" with the QA pipeline (its query is recorded on the current run)."""
        state = self._phrase_state
        sub = self.run(self.words.phrase_question.format(phrase=phrase), task="qa", answer_type="set")
        if state is not None:
            state.result.tools.extend(sub.tools)
            state.result.usage = state.result.usage + sub.usage
            state.result.llm_calls += sub.llm_calls
            state.result.context.setdefault("resolved", {})[phrase] = sub.answer
        symbols = _symbols_of(sub.answer)
        known = self.grounder.known_symbols(set(symbols))
        of_kind = [s for s in symbols if not labels or known.get(s) in labels]
        if of_kind or not symbols:
            return of_kind
        # the answer is where the described node is ("the sign in the hallway that has the bike": R3): the
        # members of the phrase's own class that those nodes hold
        found = [s for s in symbols if s in known]
        held = self._held_of_head(phrase, found, labels)
        if held or not self.words.starts_with_any(phrase, self.words.layer_words):
            return held or found
        # a phrase headed by a layer's word answered with what such a node holds ("the place where the decor
        # in R5 sits": O70): the nodes of that kind that hold it
        return self._holders(found, kind) or found

    def _held_of_head(self, phrase: str, holders: list[str], labels: Sequence[str]) -> list[str]:
        """The nodes of the phrase's head class (its first linked class of ``labels``) that ``holders`` hold
        along CONTAINS; empty when the phrase has no such class."""
        head = next(
            (
                link.value
                for link in self.linker().link(phrase)
                if link.key == ont.CLASS_KEY and (not labels or link.label in labels)
            ),
            None,
        )
        return self._held_members(holders, head, labels) if head is not None else []

    def _held_members(self, holders: list[str], cls: str, labels: Sequence[str] = ()) -> list[str]:
        """The nodes of class ``cls`` (and of one of ``labels``, when given) that ``holders`` hold along
        CONTAINS, sorted; empty when ``holders`` is."""
        if not holders:
            return []
        rows = self.store.query(
            f"MATCH (h)-[:{ont.CONTAINS}*]->(n) WHERE h.{ont.SYMBOL_KEY} IN $h AND n.{ont.CLASS_KEY} = $c "
            f"AND (size($labels) = 0 OR any(l IN labels(n) WHERE l IN $labels)) "
            f"RETURN DISTINCT n.{ont.SYMBOL_KEY} AS s ORDER BY s",
            {"h": holders, "c": cls, "labels": list(labels)},
            max_rows=500,
        ).rows
        return [str(r["s"]) for r in rows if r.get("s")]

    def _holders(self, symbols: list[str], kind: str) -> list[str]:
        """The nodes of ``kind`` that hold ``symbols`` along CONTAINS (two hops at most): "put X where Y is"
        names Y for the place that holds it."""
        return self._along_contains(symbols, kind, up=True)

    def _members(self, symbols: list[str], kind: str) -> list[str]:
        """The nodes of ``kind`` that ``symbols`` hold along CONTAINS (two hops at most): "leave X somewhere
        in R3" names R3 for any place in it."""
        return self._along_contains(symbols, kind, up=False)

    def _along_contains(self, symbols: list[str], kind: str, *, up: bool) -> list[str]:
        spec = self.domain.kinds.get(kind)
        if spec is None:
            return []
        key = ont.SYMBOL_KEY
        path = f"(b)-[:{ont.CONTAINS}*1..2]->(a)" if up else f"(a)-[:{ont.CONTAINS}*1..2]->(b)"
        rows = self.store.query(
            f"MATCH {path} WHERE a.{key} IN $s AND any(l IN labels(b) WHERE l IN $labels) "
            f"RETURN DISTINCT b.{key} AS s ORDER BY s",
            {"s": symbols, "labels": list(spec.labels)},
            max_rows=500,
        ).rows
        return [str(r["s"]) for r in rows if r.get("s")]

    def _ground(self, state: RunState, links: Sequence[Link]) -> None:
        self._phrase_state = state
        self._widened = {}
        try:
            self._ground_loop(state, links)
        finally:
            self._phrase_state = None

    def sketch_grammar(self) -> str | None:
        """The GBNF grammar of goal-sketch replies over this graph's symbols (None where the model cannot
        follow one)."""
        if not self.config.grammar or not getattr(self.model, "supports_grammar", False):
            return None
        if "sketch" not in self._system:
            symbols = {k: v for k, v in self._kind_symbols().items() if len(v) <= _MAX_GRAMMAR_SYMBOLS}
            self._system["sketch"] = sketch_grammar(self.domain, symbols).text
        return self._system["sketch"]

    def _kind_symbols(self) -> dict[str, list[str]]:
        """The graph's symbols of each goal-argument kind (a kind with more than the grammar lists: cut)."""
        if self._symbols_by_kind is None:
            self._symbols_by_kind = {}
            for name, kind in self.domain.kinds.items():
                rows = self.store.query(
                    f"MATCH (n) WHERE any(l IN labels(n) WHERE l IN $labels) RETURN n.{ont.SYMBOL_KEY} AS s",
                    {"labels": list(kind.labels)},
                    max_rows=_MAX_GRAMMAR_SYMBOLS + 1,
                ).rows
                self._symbols_by_kind[name] = [str(r["s"]) for r in rows if r.get("s")]
        return self._symbols_by_kind

    def _ground_loop(self, state: RunState, links: Sequence[Link]) -> None:
        grammar = self.sketch_grammar()
        for attempt in range(self._rounds()):
            draft = self._aligned(state, parse_reply(self._replies(state, 1, grammar)[0], "pddl"), links)
            problems = self._draft_problems(state, draft, links) if attempt == 0 else []
            if problems and self.config.candidates > 1 and not self._out_of_time(state):
                # a greedy sketch that misses its instruction: the first sampled one that does not wins,
                # else the first that the greedy one completes (one only avoids, the other only asks)
                others = [
                    self._aligned(state, parse_reply(reply, "pddl"), links)
                    for reply in self._replies(state, self.config.candidates - 1, grammar, greedy=False)
                ]
                joined = [j for other in others if (j := self._complement(draft, other)) is not None]
                for other in [o for o in others if o.goal] + joined:
                    if not self._draft_problems(state, other, links):
                        state.result.context.setdefault("sketch_feedback", []).extend(problems)
                        draft, problems = other, []
                        break
            state.messages.append(Message.assistant(_render_draft(draft)))
            if not draft.goal:
                if self._retry(
                    state, attempt, "Reply with Goal: (...) and, if it uses ?x, Cypher: ...", "reply"
                ):
                    continue
                break
            if problems and self._retry(
                state, attempt, "That goal does not fit: " + "; ".join(problems) + ".", "reply"
            ):
                state.result.context.setdefault("sketch_feedback", []).extend(problems)
                continue
            bindings: dict[str, list[str]] = {}
            if draft.cypher:
                query, notes = self._linked_values(draft.cypher, links)
                result, problem, _ = self._execute(state, query, notes)
                if result is None:
                    if self._retry(state, attempt, problem or "The query failed.", "reply"):
                        continue
                    break
                for col in result.columns:
                    bindings[col.split(".")[-1]] = [
                        str(r.get(col)) for r in result.rows if r.get(col) is not None
                    ]
                    bindings[col] = bindings[col.split(".")[-1]]
            question = state.result.question
            choice = self.words.says_choice(question) and not self.words.says(
                question, self.words.every_words
            )
            plural = {
                link.value.lower()
                for link in links
                if link.key == ont.CLASS_KEY
                and (_is_plural(link.mention, link.value) or self._said_of_every(question, link.mention))
                and not choice
            }
            alone = said_alone(draft.goal, question, self.words, self._arg_mentions(links))
            try:
                sketch = resolve_sketch(
                    draft.goal,
                    self.domain,
                    classes=lambda name, kind, q=question: self._classes_said(q, links, name, kind, state),
                    bindings=bindings,
                    plural=lambda name, named=frozenset(plural): bool(
                        {name.lower(), *(v.lower() for v in self._class_values(name))} & named
                    ),
                    holders=self._holders,
                    members=self._members if choice else None,  # "somewhere in R3": any place of it
                    contents=self._members,  # "[object in hallway R4]" found R4: the objects it holds
                    asked=alone.__contains__,  # "visit the lounge, then wait by the bag": the lounge stays
                )
            except SketchError as exc:
                state.result.raw_answer = draft.goal
                state.result.error = f"goal sketch {draft.goal!r}: {exc}"
                if self._retry(state, attempt, f"That goal does not work: {exc}.", "reply"):
                    continue
                return
            state.result.context["sketch"] = draft.goal
            goal = sketch.goal
            offered = self._offered(question, links)
            if offered is not None and all(ont.has_symbol_shape(o) for o in offered):
                goal, more = offer_alternatives(goal, offered)
                state.result.context.setdefault("rewrites", []).extend(more)
            self._accept(state, goal)
            if state.result.error is None or not self._retry(
                state, attempt, f"That goal does not ground: {state.result.error}.", "reply"
            ):
                return

    def _as_offered(self, answer: str, question: str) -> str | None:
        """The answer the question offers ("just answer bed or bicycle") that names the class of the one node
        ``answer`` is, as offered; None when it offers none, or ``answer`` is no one node of those classes."""
        options = self.words.offered_answers(question)
        if not options or not is_symbol(answer.strip()):
            return None
        rows = self.store.query(
            f"MATCH (n {{{ont.SYMBOL_KEY}: $s}}) RETURN n.{ont.CLASS_KEY} AS c", {"s": answer.strip()}
        ).rows
        cls = str(rows[0].get("c") or "").lower() if rows else ""
        for option in options:
            values = {option.lower().replace(" ", "_")}
            values |= {link.value.lower() for link in self.linker().link(option) if link.key == ont.CLASS_KEY}
            if cls and cls in values:
                return option
        return None

    def _said_of_every(self, text: str, mention: str) -> bool:
        """Whether ``mention`` follows one of the language's ``every_words`` ("every hallway", "each of the
        rooms"), at most two words before it: every member is meant, though the noun is singular."""
        for start, _ in self.words.said_spans(text, [mention]):
            before = " ".join(text[:start].split()[-3:])
            if self.words.says(before, self.words.every_words):
                return True
        return False

    def _aligned(self, state: RunState, draft: _Draft, links: Sequence[Link]) -> _Draft:
        """``draft`` with its sketch's classes widened to the descriptions the instruction gives them
        (``widen_to_descriptions``), ending where the instruction says to end (``end_where_said``), a
        relation it split joined (``join_to_relation``), made to say what the
        instruction's verbs ask for (``align_to_verbs``)
        and about the objects it names rather than the room they are in (``scope_to_named_class``); the
        changes go into the result's rewrites."""
        if not draft.goal:
            return draft
        question = state.result.question

        mentions = self._arg_mentions(links, symbols=False)
        goal, notes = polarity_where_said(
            draft.goal, question, self.domain, self.words, self._arg_mentions(links)
        )
        goal, more = complete_parts(
            goal,
            question,
            self._named(links),
            self.domain,
            self.words,
            canonical=self._class_values,
            holds=lambda symbols, members: self._holds_any(" ".join(symbols), members),
        )
        notes += more
        goal, more = refer_back(goal, question, self.words, [m for link in links for m in link.mentions])
        notes += more
        layers = sorted(self.words.layer_words, key=len, reverse=True)
        goal, more, widened = widen_to_descriptions(goal, question, mentions, self.words, layers=layers)
        notes += more
        self._widened.update(widened)

        def to_layer_heads(goal: str) -> tuple[str, list[str]]:
            goal, more, headed = widen_to_layer_heads(
                goal,
                question,
                self.domain,
                mentions,
                self.words,
                lambda inner: {
                    link.label for link in links if link.value.lower() in {inner.lower(), *mentions(inner)}
                },
            )
            self._widened.update({phrase: widened.get(was, was) for phrase, was in headed.items()})
            return goal, more

        goal, more = to_layer_heads(goal)
        notes += more
        goal, more = sequence_as_and(goal, question, self.words)
        notes += more
        goal, more = choice_as_any(goal, question, self.words)
        notes += more
        goal, more = end_where_said(goal, question, self.domain, self.words, mentions)
        notes += more
        goal, more = one_end(goal, question, self.domain, self.words, mentions)
        notes += more
        goal, more = never_entered(goal, question, self.domain, self.words, self._arg_mentions(links))
        notes += more
        goal, more = join_to_relation(goal, question, self.domain, self.words)
        notes += more
        goal, more = align_to_verbs(goal, question, self.domain, self.words)
        notes += more
        text = goal.lower()
        unused = [
            link.value
            for link in links
            if link.key == ont.CLASS_KEY
            and link.seen
            and (kind := self.domain.kind_of_label(link.label)) is not None
            and kind.name == "object"
            and not any(m.lower() in text for m in (link.value, *link.mentions, *link.symbols))
            # said by a node the model found that holds it ("drop it off by the bicycle": its place P10247)
            and not self._holds_any(goal, link.symbols, set(_named_nodes(links)))
        ]
        unused_said = [m for link in links if link.value in unused for m in link.mentions]
        described = {
            phrase for phrase in self._widened if not self._said_right_after(question, unused_said, phrase)
        }
        goal, more = scope_to_named_class(
            goal,
            list(dict.fromkeys(unused)),
            self.domain,
            set(_named_nodes(links)),
            described,
            said_in=lambda room: self._said_in_one_part(question, unused_said, room, links),
        )
        notes += more
        if more:  # the class it scoped to may be what a node of another layer holds
            goal, more = to_layer_heads(goal)
            notes += more
        if not notes:
            return draft
        state.result.context.setdefault("rewrites", []).extend(notes)
        return _Draft(draft.cypher, goal)

    def _arg_mentions(self, links: Sequence[Link], symbols: bool = True) -> Callable[[str], list[str]]:
        """How the instruction may say a sketch argument: the mentions of the links of its class, or (with
        ``symbols``) of the link that names that symbol alone ("the bed": O275)."""

        def mentions(inner: str) -> list[str]:
            values = {inner.lower(), *(v.lower() for v in self._class_values(inner))}
            return [
                m
                for link in links
                if link.value.lower() in values or (symbols and link.symbols == (inner,))
                for m in link.mentions
            ]

        return mentions

    def _named(self, links: Sequence[Link]) -> list[Named]:
        """The things ``links`` name that a goal can take as arguments (for :func:`complete_parts`)."""
        out = []
        for link in links:
            if not link.seen:
                continue
            if link.key == ont.SYMBOL_KEY:
                kind = self.domain.kind_of_symbol(link.value)
                argument, symbols = link.value, (link.value,)
            else:
                spec = self.domain.kind_of_label(link.label)
                kind = spec.name if spec is not None else None
                argument, symbols = f"[{link.value}]", link.symbols
            if kind is not None:
                out.append(Named(link.mentions, argument, kind, tuple(symbols)))
        return out

    def _said_in_one_part(self, text: str, mentions: Sequence[str], room: str, links: Sequence[Link]) -> bool:
        """Whether ``text`` says one of ``mentions`` and then ``room`` (a symbol, said as itself or by a
        class with that one member, or a bracket's words) in one part: no punctuation or ``part_words``
        between ("one of the chairs in R5")."""
        if room.startswith("["):
            said = [room.strip("[]")]
        else:
            said = [room, *(m for link in links if link.symbols == (room,) for m in link.mentions)]
        firsts = self.words.said_spans(text, [m for m in mentions if m])
        rooms = self.words.said_spans(text, [m for m in said if m])
        for _, end in firsts:
            after = [s for s, _ in rooms if s >= end]
            if after:
                between = text[end : min(after)]
                if not re.search(r"[,.;:!?()]", between) and not self.words.says(
                    between, self.words.part_words
                ):
                    return True
        return False

    def _said_right_after(self, text: str, mentions: Sequence[str], phrase: str) -> bool:
        """Whether ``phrase`` starts at most two words after one of ``mentions`` in ``text`` ("the decorations
        in the hallway next to the lounge": the described room is where they are, a scope)."""
        head = phrase.split()[0] if phrase.split() else ""
        for _, end in self.words.said_spans(text, mentions):
            after = text[end:].split()[:3]
            if head and head.lower() in [w.strip(",.").lower() for w in after]:
                return True
        return False

    def _holds_any(self, goal: str, members: Sequence[str], said: Collection[str] = ()) -> bool:
        """Whether a symbol of ``goal`` the instruction does not say (``said``) holds one of ``members`` along
        CONTAINS (two hops at most)."""
        named = [s for s in ont.SYMBOL_IN_TEXT.findall(goal) if ont.has_symbol_shape(s) and s not in said]
        if not named or not members:
            return False
        rows = self.store.query(
            f"MATCH (h)-[:{ont.CONTAINS}*1..2]->(m) WHERE h.{ont.SYMBOL_KEY} IN $h AND m.{ont.SYMBOL_KEY} IN $m "
            "RETURN count(*) AS n",
            {"h": named, "m": list(members)},
        ).rows
        return bool(rows and rows[0].get("n"))

    def _complement(self, a: _Draft, b: _Draft) -> _Draft | None:
        """``(and a b)`` when one sketch only says what to avoid and the other only what to do ("get to the
        bike without the lounge": one candidate wrote the avoidance, another the bike); None otherwise."""
        if not a.goal or not b.goal or (a.cypher and b.cypher):
            return None
        avoids = [only_negations(d.goal or "", self.domain) for d in (a, b)]
        negates = [re.search(r"\(\s*not\b", d.goal or "") is not None for d in (a, b)]
        if avoids[0] == avoids[1] or negates[avoids.index(False)]:
            return None
        return _Draft(a.cypher or b.cypher, f"(and {a.goal} {b.goal})")

    def _draft_problems(self, state: RunState, draft: _Draft, links: Sequence[Link]) -> list[str]:
        """What a goal sketch misses of its instruction (symbols, linked things, the verbs' predicates, a
        goal that only says what to avoid)."""
        if not draft.goal:
            return ["no goal"]
        problems = sketch_problems(draft, links, self._class_values, state.result.question) + verb_problems(
            draft.goal, state.result.question, self.domain, self.words
        )
        if only_negations(draft.goal, self.domain):
            problems.append(
                "the goal only says what to avoid, which holds before the robot moves: join what the "
                "instruction asks to do to it with (and ...)"
            )
        return problems

    def _retry(self, state: RunState, attempt: int, feedback: str, what: str = "query") -> bool:
        """Send ``feedback`` back when another attempt is allowed; False when the budget is spent."""
        if attempt + 1 >= self._rounds() or self._out_of_time(state):
            return False
        state.messages.append(Message.user(f"{feedback}\nWrite a corrected {what}."))
        return True


_PINNED_ENDS_COUNTED = (
    "Both ends of the query's path are named nodes, so counting them gives 0 or 1: for how many hops lie "
    "between them, RETURN length(p) for p = shortestPath((a)-[:REL*]-(b))."
)

#: the share of the time budget a form's one short constrained call may still start in
_FORM_GRACE = 0.5


def _vote_rounds(rounds: Sequence[Sequence[Outcome]]) -> Outcome | None:
    """The vote over every round's candidates, the latest round first (it wins ties: it was told more)."""
    return vote([o for r in reversed(rounds) for o in r])


def _render_draft(draft: _Draft) -> str:
    if draft.goal is None:
        return draft.cypher
    return f"Goal: {draft.goal}" + (f"\nCypher: {draft.cypher}" if draft.cypher else "")


def parse_reply(text: str, task: Task) -> _Draft:
    """The query (and goal sketch) of a model reply: fences, "Cypher:" prefixes and trailing prose removed."""
    text = text.strip()
    fence = re.search(r"```(?:cypher|sql|pddl)?\s*\n?(.*?)(?:```|$)", text, re.S | re.I)
    if fence and task == "qa":
        text = fence.group(1).strip()
    if task == "pddl":
        cypher = ""
        goal = None
        m = re.search(r"(?im)^\s*cypher\s*:\s*(.*)$", text)
        if m:
            cypher = m.group(1).strip().strip("`")
            if cypher.lower().rstrip(".") in ("none", "", "n/a", "-"):
                cypher = ""
        g = re.search(r"(?is)goal\s*:\s*(\(.*)", text)
        if g:
            goal = extract_goal(g.group(1))
        elif text.lstrip().startswith("("):
            goal = extract_goal(text)
        return _Draft(cypher, goal)
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    query_lines: list[str] = []
    for line in lines:
        line = re.sub(r"^(?:cypher|query)\s*:\s*", "", line, flags=re.I)
        if not query_lines and not re.match(r"(?i)(MATCH|OPTIONAL|WITH|UNWIND|CALL|RETURN)\b", line):
            continue
        if query_lines and re.match(r"(?i)(Q:|Question|Note|This|The |Explanation)", line):
            break
        query_lines.append(line)
    return _Draft(" ".join(query_lines).rstrip(";").strip())


_ROOM_NODE = (
    r"\(\s*\w*\s*:\s*`?Room`?\s*\{{[^{{}}]*?(?:class|nodeSymbol)\s*:\s*'(?P<{v}>[^']+)'[^{{}}]*\}}\s*\)"
)
_NEIGHBOUR_HOLDS = re.compile(
    rf"(?P<a>{_ROOM_NODE.format(v='av')})\s*<?-\s*\[\s*\w*\s*:\s*ROOM_CONNECTED\s*\]\s*->?\s*"
    rf"(?P<b>{_ROOM_NODE.format(v='bv')})(?=\s*-\s*\[\s*\w*\s*:\s*CONTAINS[^\]]*\]\s*->)"
)


def _value_said(value: str, question: str, ignore: Collection[str] = ()) -> bool:
    """Whether ``question`` says a word of the property ``value`` (``'trash_can'``: "trash" or "can"),
    the words in ``ignore`` not counting."""
    said = set(re.findall(r"[a-z]+", question.lower())) - set(ignore)
    return bool(set(re.findall(r"[a-z]+", value.lower())) & said)


def unused_links(query: str, links: Sequence[Link]) -> list[Link]:
    """Links whose value the query never names (a symbol, or a class value as a string literal, or one of the
    class's listed nodes)."""
    literals = {v.lower() for v in re.findall(r"'([^']*)'", query)} | {
        v.lower() for v in re.findall(r'"([^"]*)"', query)
    }
    out = []
    for link in links:
        if link.value.lower() in literals:
            continue
        if link.key == ont.SYMBOL_KEY and re.search(rf"\b{re.escape(link.value)}\b", query):
            continue
        if link.key != ont.SYMBOL_KEY and any(s.lower() in literals for s in link.symbols):
            continue  # "the lounge" matched by its symbol R1
        out.append(link)
    return out


_AGGREGATE = re.compile(r"\b(?:count|sum|avg|min|max|collect|size)\s*\(", re.I)


_KEY_FILTER = (
    re.compile(r"\((?P<v>\w+)(?::\w+)*\s*\{(?P<map>[^{}]*)\}"),
    re.compile(r"\b(?P<v>\w+)\.(?P<k>\w+)\s*=\s*'(?P<val>[^']*)'"),
)


def conflicting_filters(query: str) -> list[str]:
    """Equality filters that ask one variable's key for two values (``(o:Object {class: 'storage'}) WHERE
    o.class = 'furniture'``): such a query finds nothing whatever the graph holds. One phrase each."""
    out: list[str] = []
    node_map, equality = _KEY_FILTER
    # one clause at a time (a variable may be bound anew after WITH or UNION); an OR makes no conjunction
    for part in re.split(r"(?i)\bWITH\b|\bUNION\b", query):
        if re.search(r"(?i)\b(?:OR|XOR)\b", part):
            continue
        seen: dict[tuple[str, str], set[str]] = {}
        for m in node_map.finditer(part):
            for k, val in re.findall(r"(\w+)\s*:\s*'([^']*)'", m.group("map")):
                seen.setdefault((m.group("v"), k), set()).add(val.lower())
        for m in equality.finditer(part):
            seen.setdefault((m.group("v"), m.group("k")), set()).add(m.group("val").lower())
        out += [
            f"{v}.{k} is asked to be {' and '.join(repr(x) for x in sorted(vals))}"
            for (v, k), vals in seen.items()
            if len(vals) > 1
        ]
    return out


def ranked_count_query(query: str) -> tuple[str, int] | None:
    """``(count query, n)`` for the first ``ORDER BY ... LIMIT n`` of ``query``: the query up to the clause
    that orders, counting the distinct rows of that clause's items that are not aggregates (what is ranked);
    None when the query ranks nothing, or only aggregates."""
    m = re.search(r"\bORDER\s+BY\b(?:(?!\bORDER\s+BY\b|\bLIMIT\b).)*?\bLIMIT\s+(\d+)\b", query, re.I | re.S)
    if m is None:
        return None
    clauses = list(re.finditer(r"\b(WITH|RETURN)\s+(?:DISTINCT\s+)?", query[: m.start()], re.I))
    if not clauses:
        return None
    clause = clauses[-1]
    items, depth, start = [], 0, clause.end()
    text = query[: m.start()]
    for i in range(clause.end(), len(text) + 1):
        ch = text[i] if i < len(text) else ","
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 0:
            items.append(re.split(r"\s+AS\s+", text[start:i].strip(), flags=re.I)[0].strip())
            start = i + 1
    ranked = [e for e in items if e and not _AGGREGATE.search(e)]
    if not ranked:
        return None
    keys = ", ".join(f"{e} AS ranked_{i}" for i, e in enumerate(ranked))
    head = query[: clause.start()].rstrip()
    return f"{head} WITH DISTINCT {keys} RETURN count(*) AS n", int(m.group(1))


def unused_numbers(query: str, question: str, links: Sequence[Link]) -> list[str]:
    """Numbers ``question`` states (not inside a node symbol, a linked mention or a dimension like 2D) that
    ``query`` uses in no unit (``90`` cm used as ``0.9``): "within 2 m of the food" answered without 2."""
    text = question
    for link in links:
        for mention in link.mentions:
            text = re.sub(re.escape(mention), " ", text, flags=re.I)
    stated = re.findall(r"(?<![\w.])(\d+(?:\.\d+)?)(?![\d.]*\d)(?![dD]\b)(?=[A-Za-z]*\b)", text)
    used = {float(v) for v in re.findall(r"\d+(?:\.\d+)?", re.sub(r"\b[A-Za-z_]\w*\d+\w*", " ", query))}
    out = []
    for value in dict.fromkeys(stated):
        x = float(value)
        if not any(abs(x * f - u) < 1e-6 for u in used for f in (1, 0.01, 0.001, 100, 1000)):
            out.append(value)
    return out


def invented_symbols(query: str, links: Sequence[Link], question: str) -> list[str]:
    """Node symbols the query filters on that the question never named, directly or as a member of a linked
    class ("How many rooms are there?" answered for R1 only)."""
    known = {link.value.lower() for link in links if link.key == ont.SYMBOL_KEY}
    known |= {s.lower() for link in links for s in link.symbols}
    said = {w.lower() for w in re.findall(r"\b[A-Za-z]\d+\b", question)}
    found = dict.fromkeys(v for v in re.findall(r"'([A-Za-z]\d+)'", query))
    return [v for v in found if v.lower() not in known | said]


def sketch_problems(
    draft: _Draft,
    links: Sequence[Link],
    canonical: Any = None,
    instruction: str = "",
) -> list[str]:
    """What a goal sketch misses of its instruction: symbols the instruction never named, linked things it
    leaves out, and (given the ``instruction``) classes it never mentions (each phrased for the model to
    fix)."""
    goal = draft.goal or ""
    used = set(re.findall(r"\b[A-Za-z]\d+\b", goal))
    linked = {link.value for link in links if link.key == ont.SYMBOL_KEY}
    problems = [f"{sym} is not in the instruction" for sym in sorted(used - linked)]
    classes = {c.strip().lower() for c in re.findall(r"\[([^\]]+)\]", goal)}
    if canonical is not None:  # [bike] names the class bicycle
        classes |= {v.lower() for c in list(classes) for v in canonical(c)}
    text = f"{goal} {draft.cypher}".lower()
    for link in links:
        if link.key == ont.SYMBOL_KEY and link.value not in used and link.value.lower() not in text:
            problems.append(f"the instruction names {link.value} ({link.mention!r}): use it")
        elif (
            link.key != ont.SYMBOL_KEY
            and not ({link.value.lower(), link.mention.lower()} & classes)
            and link.value.lower() not in text
            and not any(link.mention.lower() in c or link.value.lower() in c for c in classes)
        ):
            problems.append(f"the instruction mentions {link.mention!r}: use [{link.value}]")
    if instruction:
        said = set(re.findall(r"[a-z0-9]+", instruction.lower()))
        values = {link.value.lower() for link in links} | {m.lower() for link in links for m in link.mentions}
        for inner in sorted(classes - {"?"}):
            if ont.has_symbol_shape(inner.upper()) or inner in values:
                continue
            own = set(re.findall(r"[a-z0-9]+", inner))
            known = {v.lower() for v in canonical(inner)} if canonical is not None else set()
            near = any(
                len(o) > 3 and len(w) > 3 and (o.startswith(w) or w.startswith(o)) for o in own for w in said
            )  # "lights" for [light]
            if not own & said and not known & values and not near:
                problems.append(f"the instruction never mentions [{inner}]: leave it out")
    return problems


def shape_mismatch(result: QueryResult, answer_type: str | None, question: str = "") -> str | None:
    """Why rows cannot hold an answer of ``answer_type`` (None when they can): only true/false or names where
    a number is asked for, only true/false, numbers or positions where nodes or names are."""
    cells = [v for row in result.rows for v in row.values() if v is not None]
    if not cells or answer_type is None:
        return None
    truth_values = all(isinstance(v, bool) for v in cells)
    if truth_values and answer_type == "number":
        return "It returned true/false, but the answer is a number: return that number."
    if truth_values and answer_type in ("set", "list"):
        return (
            "It returned true/false, but the answer is the nodes or names themselves: return them "
            "(e.g. n.nodeSymbol), not whether any exist."
        )
    numeric = all(_is_number(v) or (isinstance(v, list) and v and all(map(_is_number, v))) for v in cells)
    points = all(isinstance(v, dict) and {"x", "y"} <= set(v) for v in cells)
    if answer_type in ("set", "list", "string") and points:
        return "It returned positions, but the answer is nodes or names: return n.nodeSymbol (ordered if needed)."
    if answer_type in ("set", "list", "string") and numeric:
        return (
            f"It returned only numbers ({result.columns[0]} = {cells[0]}), but the answer is nodes or names: "
            "return n.nodeSymbol (ordered by that number if needed), not the number."
        )
    if answer_type == "number" and numeric and len(result.rows) > 1 and result.columns:
        first = {str(row.get(result.columns[0])) for row in result.rows}
        if len(first) > 1:
            return (
                f"It returned {len(result.rows)} rows of numbers, but the answer is one number: aggregate "
                "them (count, sum, avg, max, min) or ORDER BY ... LIMIT 1."
            )
    if answer_type == "number" and not any(_is_number(v) for v in cells) and len(cells) == 1:
        return "It returned a name, but the answer is a number: return the count or the measure."
    if answer_type == "point" and not points:
        return "The answer is a position: return the node's center (n.center)."
    if (
        answer_type == "dict"
        and len(result.rows) == 1
        and len(result.columns) == 1
        and not isinstance(cells[0], (list, dict))
    ):
        return (
            f"It returned one value ({result.columns[0]} = {cells[0]}), but the answer is a value per group: "
            "return each group's name beside its value (e.g. r.nodeSymbol, count(o))."
        )
    return None


def _symbols_only(result: QueryResult) -> bool:
    """Whether every cell of ``result`` is a node symbol (no name, number, true/false or position)."""
    cells = [v for row in result.rows for v in row.values() if v is not None]
    return bool(cells) and all(isinstance(v, str) and ont.has_symbol_shape(v) for v in cells)


def _counted_nothing(result: QueryResult, query: str) -> bool:
    """Whether ``result`` is one count of 0 (``RETURN count(x)`` over a pattern that matched nothing)."""
    cells = [v for row in result.rows for v in row.values()]
    return (
        len(result.rows) == 1
        and len(cells) == 1
        and cells[0] == 0
        and not isinstance(cells[0], bool)
        and re.search(r"\bcount\s*\(", query, re.I) is not None
    )


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


_DISTANCE_BOUND = re.compile(
    r"point\.distance\([^()]*(?:\([^()]*\)[^()]*)*\)\s*[<>]=?\s*(\d+(?:\.\d+)?)", re.I
)


def _symbols_of(answer: str | None) -> list[str]:
    """The node symbols an answer consists of (``O3``, ``<R3, R5>``); empty when it holds anything else."""
    if not answer:
        return []
    items = [i.strip() for i in answer.strip().strip("<>[]").split(",") if i.strip()]
    return items if items and all(is_symbol(i) for i in items) else []


def _absorb(result: AgentResult, earlier: AgentResult) -> None:
    """Count what ``earlier`` (a plan call or a step that came before) spent into ``result``."""
    result.usage = earlier.usage + result.usage
    result.llm_calls += earlier.llm_calls
    result.tools = earlier.tools + result.tools
    result.transcript = earlier.transcript + result.transcript
    timings = result.context.setdefault("timings_s", {})
    for key, value in earlier.context.get("timings_s", {}).items():
        timings[key] = timings.get(key, 0.0) + value
    for key in ("rewrites", "links", "examples"):
        if earlier.context.get(key):
            result.context[key] = list(earlier.context[key]) + list(result.context.get(key, []))
    if "plan" in earlier.context and "plan" not in result.context:
        result.context["plan"] = earlier.context["plan"]


def _named_nodes(links: Sequence[Link]) -> dict[str, str]:
    """The nodes the question names, symbol -> how it names them: a symbol, or a class with one member in the
    graph ("the lounge" when one room is a lounge). Read off the links, so off the graph, not the wording."""
    named = {link.value: link.value for link in links if link.key == ont.SYMBOL_KEY}
    for link in links:
        if link.key != ont.SYMBOL_KEY and link.seen and len(link.symbols) == 1:
            named.setdefault(link.symbols[0], f"{link.symbols[0]} (the only {link.value})")
    return named


def _route_between_named(answer: str, links: Sequence[Link]) -> list[str]:
    """The items of a list answer (``[R1, R2, R3]``) whose two ends are different nodes the question names;
    empty otherwise."""
    items = [item.strip() for item in answer.strip("[]").split(",")]
    ends_named = {items[0], items[-1]} <= set(_named_nodes(links))
    return items if len(items) >= 2 and items[0] != items[-1] and ends_named else []


_YES_NO_KIND = (
    "The question asks yes or no: return the comparison itself (e.g. a < b), not a number or a name."
)


def _naming_literals(links: Sequence[Link]) -> dict[str, str]:
    """Literals a query may match a named node by -> its symbol: the symbol, or a class with one member."""
    return {
        link.value: link.value if link.key == ont.SYMBOL_KEY else link.symbols[0]
        for link in links
        if (link.key == ont.SYMBOL_KEY or (link.seen and len(link.symbols) == 1))
    }


def _returned_class_labels(query: str) -> set[str]:
    """The labels of the nodes whose class ``query`` returns (``RETURN DISTINCT o.class``: ``{'Object'}``);
    empty when it returns none, or one of them has no label in the query."""
    returned = re.findall(rf"\b([A-Za-z_]\w*)\.{ont.CLASS_KEY}\b", return_clause(query))
    labels = var_labels(query) if returned else {}
    if any(not labels.get(var) for var in returned):
        return set()
    return {lab for var in returned for lab in labels[var]}


def _named_value(link: Link) -> str:
    """What a link names: its symbol (a symbol, or a class with one member), else its class value."""
    if link.key == ont.SYMBOL_KEY:
        return link.value
    return link.symbols[0] if len(link.symbols) == 1 else link.value


def _normalized(query: str) -> str:
    return " ".join(query.split()).rstrip(";").lower()


def _is_plural(mention: str, value: str) -> bool:
    """ "hallways" for hallway, "chairs" for seating; not "wastebin" for trash, "glass" for glass."""
    m, v = mention.lower(), value.lower()
    return m != v and m.endswith("s") and not m.endswith("ss") and not v.endswith("s")


def _labels(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]
