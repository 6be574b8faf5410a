"""``CypherAgent``: questions and instructions over a scene graph, answered by LLM-written Cypher.

Built for small local models and cheap for large ones; one pipeline, every stage testable on its own:

1. **link** the question's mentions to stored values and symbols (:mod:`~scenerag.agents.linking`);
2. **retrieve** the k most similar worked examples, generated from the live graph
   (:mod:`~scenerag.agents.examples`), by the question with its mentions masked;
3. **generate** one query (QA) or a query plus a goal sketch (PDDL) in one plain-text reply — a short
   static system prompt (schema + rules, whose KV state a local model keeps) and a per-question user turn;
4. **check** it against the question (linked things it ignores, symbols and classes it never mentioned: sent
   back once) and the schema (:mod:`~scenerag.agents.cypher_check`, plus the repairs of
   :mod:`~scenerag.agents.query_repair`: classes as labels, symbols as classes, a distance query pinned to
   its own reference node), **run** it read-only, and (``agentic``) send errors or an unexpected empty
   result back with a diagnosis, up to ``max_tool_calls`` queries; a correction that repeats a failed query
   is sampled again;
5. **format** the rows as SLDP without another LLM call when their shape is clear
   (:mod:`~scenerag.agents.answer_format`); PDDL sketches are resolved to symbols and every symbol
   checked (:mod:`~scenerag.agents.goal_sketch`, :class:`~scenerag.agents.grounding.PddlGrounder`).

``feedforward`` runs one query and never retries; ``with_schema=False`` leaves the schema out of the prompt.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from scenerag.agents import prompts
from scenerag.agents.answer_format import NOT_FOUND, format_rows, is_yes_no_question
from scenerag.agents.base import RunState, extract_goal, normalize_answer, sldp_problems
from scenerag.agents.cypher_check import check_cypher
from scenerag.agents.cypher_tool import is_symbol, ran_record, summarize_rows
from scenerag.agents.decompose import SPLIT_PROMPT, needs_split, parse_split, split_by_form, substitute
from scenerag.agents.examples import CypherExample, ExampleLibrary, GraphRoles, adapt_example
from scenerag.agents.goal_sketch import SketchError, resolve_sketch
from scenerag.agents.grounding import PddlGrounder
from scenerag.agents.linking import EntityLinker, Link, mask_question
from scenerag.agents.query_repair import (
    carry_dropped_variables,
    center_arguments,
    choice_column_only,
    choice_from_comparison,
    class_symbol_conflict,
    count_grouped_by_itself,
    detach_measured_container,
    drop_class_filters,
    drop_idle_sibling,
    drop_return_trip,
    drop_scope_classes,
    extreme_in_with,
    fill_ignored_values,
    height_for_self_distance,
    holder_classes,
    merge_union_by_symbol,
    name_the_named,
    nearest_for_center_equality,
    order_by_superlative,
    others_for_self_distance,
    pick_of_two_named,
    repair_mentions,
    repair_node_operators,
    repair_query,
    repair_singleton_pairs,
    repair_symbol_layers,
    return_the_neighbour,
    split_subquery_arithmetic,
    superlative_for_bound,
    symbols_as_nodes,
    ternary_to_case,
    unpin_twice_named,
    widen_shortest_paths,
)
from scenerag.agents.result import AgentResult, Task, ToolRecord
from scenerag.errors import SceneRagError
from scenerag.graph import ontology as ont
from scenerag.lang.pddl_goal import HERACLES_DOMAIN, GoalDomain
from scenerag.llm.base import ChatModel, LLMError, Message
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
    "sketch_problems",
    "unused_links",
]

Mode = Literal["agentic", "feedforward"]


@dataclass
class CypherAgentConfig:
    """Settings of one ``CypherAgent`` variant."""

    mode: Mode = "agentic"
    with_schema: bool = True
    #: queries per question (agentic: the first plus corrections)
    max_tool_calls: int = 3
    #: worked examples retrieved into the prompt (0: none); instructions get fewer: the 1.5B model copies
    #: the predicates of whatever examples it sees
    examples_k: int = 6
    examples_k_pddl: int = 4
    #: user example files (YAML) added to the generated ones
    example_files: tuple[str, ...] = ()
    link_entities: bool = True
    #: embedder spec for example retrieval and linking ("none": word overlap and rules only)
    embedder: str = "minilm-numpy"
    query_timeout_s: float = 10.0
    max_rows: int = 200
    result_budget_tokens: int = 300
    max_reply_tokens: int = 200
    #: rewrite classes-used-as-labels and wrong-case values before running (reported in the result)
    auto_repair: bool = True
    #: answer a question worded as two steps ("Which room is the light closest to the bike in?") as two
    #: simple questions, the second about the first one's nodes (agentic QA only)
    decompose: bool = True

    @property
    def name(self) -> str:
        return f"cypher-{self.mode}-{'schema' if self.with_schema else 'noschema'}"


_QA_INTRO = (
    "You translate questions about a robot's 3D scene graph into one read-only Neo4j Cypher query over "
    "its graph database."
)
_QA_RULES = (
    "Rules: kinds of things are values of the class property, never labels: ({var}:{leaf} {{class: '{cls}'}}). "
    "{containment}*_CONNECTED edges are "
    "undirected. Distances: point.distance(a.center, b.center); heights: a.center.z. Return node symbols (n.nodeSymbol) unless "
    "the question asks for something else; return only what answers the question. Compute aggregates with "
    "WITH before filtering them.\nReply with the Cypher query only, on one line."
)


def qa_rules(schema: GraphSchema) -> str:
    """The rules of the QA prompt, with the graph's own leaf label, a class of it and the containment
    hop a model most often writes wrong (the deepest container that holds leaves only through another
    layer: Hydra's rooms through places, a KeySG building's floors through rooms)."""
    roles = GraphRoles.from_schema(schema)
    leaf = roles.leaf or ont.OBJECT
    info = schema.node_properties.get(leaf, {}).get(ont.CLASS_KEY)
    plain = _layer_word(leaf, plural=False)
    values = [v for v in (info.values or []) if v.lower() != plain] if info is not None else []
    cls = next((v for v in ("seating", "chair") if v in values), values[0] if values else "chair")
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


_PDDL_RULES = (
    "Rules: a goal sketch is a PDDL goal whose arguments are node symbols (O12, R3, P25) or, in brackets, "
    "what the instruction calls the node: [seating], [box closest to the bag]. (all ...) means every one, "
    "otherwise any one will do. Ordered steps: visited-* for the earlier steps, at-*/in-room for the last. "
    "Avoiding a room means never visiting it: (not (visited-room ...)).\nReply with Goal: ... only."
)
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
        self.model = model
        self.store = store
        self.config = config or CypherAgentConfig()
        self.domain = domain
        self.progress = progress or SILENT  # stage lines (scenerag.progress); silent by default
        self.grounder = PddlGrounder(store, domain, progress=self.progress)
        self._embedder = embedder
        self._library = library
        self._linker = linker
        self._phrase_state: RunState | None = None
        self._labels_of_symbols: dict[str, str] = {}  # node labels never change: looked up once per symbol

    @property
    def name(self) -> str:
        return self.config.name

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
            self._linker = EntityLinker(self.store, embedder=self.embedder())
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

    # -- prompts ----------------------------------------------------------------------------------------
    def system_prompt(self, task: Task) -> str:
        """The static part (cached by local models): intro, schema, rules."""
        schema = (
            prompts.schema_block(self.store.schema())
            if self.config.with_schema
            else prompts.no_schema_block()
        )
        if task == "pddl":
            return "\n\n".join(
                [
                    "You turn instructions for a robot into PDDL goal sketches over its 3D scene graph, "
                    "querying the graph database with Cypher when needed.",
                    schema,
                    "Goal predicates:\n" + self.domain.describe(),
                    _PDDL_RULES,
                ]
            )
        return "\n\n".join([_QA_INTRO, schema, qa_rules(self.store.schema())])

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
        if links:
            # goal sketches name classes as [class]: listing their nodes invites copying one of them
            described = "; ".join(link.describe(symbols=task == "qa") for link in links)
            parts.append(f"In this graph: {described}.")
        if task == "pddl":
            parts.append(f"Instruction: {question}")
        else:
            hint = prompts.SLDP_TYPE_HINTS.get(answer_type or "", "")
            parts.append(
                f"Q: {question}" + (f"\n({hint})" if hint and answer_type in ("dict", "list") else "")
            )
        return "\n\n".join(parts)

    # -- run --------------------------------------------------------------------------------------------
    def run(self, question: str, *, task: Task = "qa", answer_type: str | None = None) -> AgentResult:
        """Answer ``question`` (``task="qa"``, SLDP) or ground it (``task="pddl"``, a PDDL goal).

        A question worded as two steps (:func:`~scenerag.agents.decompose.needs_split`) is first split and
        answered step by step; when a step fails the whole question is answered in one go after all."""
        start = time.perf_counter()
        earlier: list[AgentResult] = []
        result = None
        if task == "qa" and self.config.decompose and self.config.mode != "feedforward":
            result = self._run_in_steps(question, answer_type, earlier)
        if result is None:
            result = self._run_once(question, task=task, answer_type=answer_type)
        for before in reversed(earlier):
            _absorb(result, before)
        result.question = question
        result.wall_s = time.perf_counter() - start
        self.progress.stage("answer")
        return result

    def _container_words(self) -> list[str]:
        """The graph's words for nodes that hold others: layer names and the classes of its regions."""
        schema = self.store.schema()
        words = {
            w
            for chain in schema.containment_chains()
            for label in chain[:-1]
            for w in (_layer_word(label, plural=False), " ".join(re.findall(r"[A-Z]?[a-z]+", label)).lower())
        }
        region = GraphRoles.from_schema(schema).region
        info = schema.node_properties.get(region or "", {}).get(ont.CLASS_KEY)
        return sorted(words | {v.lower() for v in (info.values or [])} if info is not None else words)

    def _run_in_steps(
        self, question: str, answer_type: str | None, earlier: list[AgentResult]
    ) -> AgentResult | None:
        """Answer a two-step question as two simple ones: the first names nodes, the second asks about them.
        None (with what was spent in ``earlier``) when the question is not two steps or a step fails."""
        containers = self._container_words()
        if not needs_split(question, containers):
            return None
        split = split_by_form(question, containers)
        if split is None:
            state = RunState(AgentResult(self.name, question, "qa", None))
            mark = time.perf_counter()
            resp = self.model.chat(
                [Message.system(SPLIT_PROMPT), Message.user(f"Q: {question}")],
                max_tokens=80,
                stop=["\n\nQ:", "\nQ:", "\n\n"],
                temperature=0.0,
                seed=0,
            )
            state.add_usage(resp.usage)
            state.messages = [Message.user(f"Q: {question}"), Message.assistant(resp.message.content)]
            state.result.context["timings_s"] = {"split": time.perf_counter() - mark}
            earlier.append(state.finish())
            split = parse_split(resp.message.content, question)
        if split is None:
            return None
        first = self._run_once(split.first, task="qa", answer_type="set")  # nodes, one or more
        earlier.append(first)
        symbols = _symbols_of(first.answer)
        if not symbols:
            return None
        then = substitute(split.then, symbols)
        second = self._run_once(then, task="qa", answer_type=answer_type)
        if second.answer is None:
            earlier.append(second)
            return None
        second.context["steps"] = [
            {"question": split.first, "answer": first.answer},
            {"question": then, "answer": second.answer},
        ]
        return second

    def _run_once(self, question: str, *, task: Task = "qa", answer_type: str | None = None) -> AgentResult:
        """One question answered in one go: link, retrieve, generate, check, run, format."""
        start = time.perf_counter()
        state = RunState(AgentResult(self.name, question, task, None))
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
                if (
                    state.result.answer is None
                    and self.config.auto_repair
                    and self.config.mode != "feedforward"
                ):
                    self._answer_by_example(state, question, answer_type, links, examples)
        except LLMError as exc:
            state.result.error = str(exc)
        state.result.wall_s = time.perf_counter() - start
        return state.finish()

    def _attempts(self) -> int:
        return 1 if self.config.mode == "feedforward" else max(1, self.config.max_tool_calls)

    def _generate(self, state: RunState, task: Task) -> _Draft:
        """One reply; a correction that repeats a query already tried is sampled again (temperature 0.7,
        seeded): greedy decoding that rewrites the same failing query would waste the remaining attempts."""
        insisted = set(state.result.context.get("feedback_only", []))  # may be right: let it run
        tried = {_normalized(t.input) for t in state.result.tools} - insisted
        draft = None
        for temperature, seed in ((0.0, 0), (0.7, len(state.result.tools))):
            mark = time.perf_counter()
            resp = self.model.chat(
                state.messages,
                max_tokens=self.config.max_reply_tokens,
                stop=list(_STOP),
                temperature=temperature,
                seed=seed,
            )
            timings = state.result.context.setdefault("timings_s", {})
            timings["llm"] = timings.get("llm", 0.0) + time.perf_counter() - mark
            state.add_usage(resp.usage)
            text = resp.message.content
            draft = parse_reply(text, task)
            if not draft.cypher or _normalized(draft.cypher) not in tried:
                break
            state.result.context["resampled"] = state.result.context.get("resampled", 0) + 1
        assert draft is not None
        state.messages.append(Message.assistant(text.strip()))
        return draft

    def _retry(self, state: RunState, attempt: int, feedback: str, what: str = "query") -> bool:
        """Send ``feedback`` back when another attempt is allowed; False when the budget is spent."""
        if attempt + 1 >= self._attempts():
            return False
        state.messages.append(Message.user(f"{feedback}\nWrite a corrected {what}."))
        return True

    def _linked_values(self, state: RunState, cypher: str, links: Sequence[Link]) -> str:
        """``cypher`` with the question's words used as values (``{nodeSymbol: 'upstairs'}``) replaced by
        what they were linked to (see :func:`repair_mentions`); the rewrite is recorded."""
        if not self.config.auto_repair:
            return cypher
        mentions = {
            link.mention.lower(): (link.label, link.key, link.value)
            for link in links
            if link.mention.lower() != link.value.lower()
        }
        fixed, notes = repair_mentions(cypher, mentions, self.store.schema())
        if notes:
            state.result.context.setdefault("rewrites", []).extend(notes)
        return fixed

    def _execute(self, state: RunState, cypher: str) -> tuple[QueryResult | None, str | None]:
        """Check, repair and run ``cypher``; ``(result, None)`` or ``(None, problem for the model)``."""
        schema = self.store.schema()
        split, notes = split_subquery_arithmetic(cypher) if self.config.auto_repair else (cypher, [])
        if self.config.auto_repair:
            split, more = merge_union_by_symbol(split)
            notes += more
            split, more = ternary_to_case(split)
            notes += more
            split, more = symbols_as_nodes(split, self._symbol_labels(split).get)
            notes += more
            split, more = repair_symbol_layers(split, self._symbol_labels(split), schema)
            notes += more
            split, more = holder_classes(split, schema)
            notes += more
        checked = check_cypher(split, schema)
        ran, notes = checked.query, notes + list(checked.rewrites)
        if self.config.auto_repair:
            ran, more = repair_query(ran, schema)
            notes += more
            ran, more = repair_node_operators(ran, schema)
            notes += more
            ran, more = carry_dropped_variables(ran)
            notes += more
            for repair in (
                count_grouped_by_itself,
                drop_return_trip,
                unpin_twice_named,
                widen_shortest_paths,
            ):
                ran, more = repair(ran)
                notes += more
            singletons = self.linker().singletons() if self.config.link_entities else {}
            ran, more = return_the_neighbour(ran, singletons)
            notes += more
            if self.config.link_entities:
                ran, more = repair_singleton_pairs(
                    ran, singletons, state.hints.get("asked_class"), state.hints.get("described")
                )
                notes += more
                ran, more = drop_idle_sibling(ran, self.linker().class_of)
                notes += more
        rewritten = ran if ran != cypher else None
        if not checked.ok:
            error = "; ".join(checked.problems)
            state.result.tools.append(ToolRecord("cypher_query", cypher, False, error=error, ran=rewritten))
            return None, f"That query cannot work: {error}."
        try:
            self.progress.stage("running query")
            result = self.store.query(
                ran, read_only=True, timeout_s=self.config.query_timeout_s, max_rows=self.config.max_rows
            )
        except SceneRagError as exc:
            state.result.tools.append(
                ToolRecord("cypher_query", cypher, False, error=str(exc), ran=rewritten)
            )
            return None, f"That query failed: {str(exc).splitlines()[0]}"
        state.result.tools.append(ran_record(cypher, result, ran=rewritten))
        if notes:
            state.result.context.setdefault("rewrites", []).extend(notes)
        return result, None

    def _invented(self, query: str, links: Sequence[Link], question: str) -> list[str]:
        """Symbols and room classes the query filters on that the question never mentioned (a filter copied
        from an example: "How many rooms are there?" answered for R1 only)."""
        invented = invented_symbols(query, links, question)
        schema = self.store.schema()
        linked = {link.value.lower() for link in links}
        for link in links:  # "the seat O55": O55's own class is no copy
            if link.key == ont.SYMBOL_KEY and (cls := self.linker().class_of(link.value)):
                linked.add(cls.lower())
        words = set(re.findall(r"[a-z]+", question.lower()))
        for value in dict.fromkeys(re.findall(r"'([^']*)'", query)):
            owner = schema.value_owner(value)
            if (
                owner is not None
                and owner[1] == ont.CLASS_KEY
                and value.lower() not in linked
                and not set(re.findall(r"[a-z]+", value.lower())) & words
            ):
                invented.append(f"'{value}'")
        said = {float(n) for n in re.findall(r"\d+(?:\.\d+)?", question)}
        for m in _DISTANCE_BOUND.finditer(query):  # "within 2 m" copied into "How far apart are the lights?"
            if float(m.group(1)) not in said:
                invented.append(f"{m.group(1)} m")
        return invented

    def _names_absent_value(self, query: str) -> bool:
        """Whether the query filters on a value the graph does not hold (its answer is "not found" whatever
        else it copied)."""
        schema = self.store.schema()
        return any(
            schema.value_owner(v) is None and not is_symbol(v) for v in re.findall(r"'([^']*)'", query)
        )

    def _empty_diagnosis(self, query: str, links: Sequence[Link]) -> str | None:
        """Why an empty result is suspicious (None when nothing says the answer should exist): every value the
        query names exists, or the question named things the query left out."""
        if self._names_absent_value(query):
            return None  # it asked for something the graph does not hold: a true "not found"
        literals = re.findall(r"'([^']*)'", query)
        unused = [link for link in links if link.value not in literals]
        hint = ""
        if unused:
            hint = " The question mentions " + "; ".join(link.describe() for link in unused) + "."
        return (
            "That query returned no rows, but what it asks for exists in the graph, so the pattern is "
            f"probably wrong (direction, hops, or a filter).{hint}"
        )

    def _answer(
        self,
        state: RunState,
        question: str,
        answer_type: str | None,
        links: Sequence[Link],
        examples: Sequence[CypherExample] = (),
    ) -> None:
        if self.config.link_entities:
            state.hints.update(self._question_hints(question, links))
        for attempt in range(self._attempts()):
            draft = self._generate(state, "qa")
            if not draft.cypher:
                if self._retry(state, attempt, "Reply with a Cypher query only."):
                    continue
                break
            draft.cypher = self._linked_values(state, draft.cypher, links)
            if self.config.auto_repair:
                draft.cypher, notes = center_arguments(draft.cypher)
                draft.cypher, more = order_by_superlative(draft.cypher, question)
                notes += more
                for repair in self._question_repairs(question):
                    draft.cypher, more = repair(draft.cypher)
                    notes += more
                if _measured_from_center(question, links):
                    draft.cypher, more = detach_measured_container(draft.cypher)
                    notes += more
                state.result.context.setdefault("rewrites", []).extend(notes)
            if (
                attempt > 0
                and self.config.auto_repair
                and _normalized(draft.cypher) in set(state.result.context.get("feedback_only", []))
            ):
                # told it ignores a linked class, the model wrote the same query: add the class itself
                ignored = [(link.label, link.key, link.value) for link in unused_links(draft.cypher, links)]
                draft.cypher, notes = fill_ignored_values(
                    draft.cypher, ignored, self.store.schema(), self._symbol_classes(ignored)
                )
                state.result.context.setdefault("rewrites", []).extend(notes)
            named = [(link.label, link.key, link.value) for link in unused_links(draft.cypher, links)]
            if self.config.auto_repair and any(key == ont.SYMBOL_KEY for _, key, _ in named):
                # a named node matched as its whole class ("the trash can O79" as every trash can)
                draft.cypher, notes = name_the_named(
                    draft.cypher, named, self._symbol_classes(named), choice=bool(_CHOICE.search(question))
                )
                state.result.context.setdefault("rewrites", []).extend(notes)
            unused = (
                [link for link in unused_links(draft.cypher, links) if not _locates_named(question, link)]
                if attempt == 0
                else []
            )
            told = _normalized(draft.cypher) in set(state.result.context.get("feedback_only", []))
            if told and self.config.auto_repair and not _REFERS_BACK.search(question):
                # told it filters on a class the question never names, the model wrote it again: drop it
                # (unless the question points at something said before: "How many of those rooms ...")
                classes = _class_literals(self._invented(draft.cypher, links, question))
                draft.cypher, notes = drop_class_filters(draft.cypher, classes)
                state.result.context.setdefault("rewrites", []).extend(notes)
            # a symbol copied from an example is as wrong in a correction as in the first query
            absent = self._names_absent_value(draft.cypher)
            invented = [] if told or absent else self._invented(draft.cypher, links, question)
            if invented and self.config.auto_repair:
                draft.cypher, notes = swap_invented_symbols(draft.cypher, links, question)
                if notes:
                    state.result.context.setdefault("rewrites", []).extend(notes)
                    invented = self._invented(draft.cypher, links, question)
            feedback = []
            if unused:
                feedback.append(
                    "The question mentions "
                    + "; ".join(link.describe() for link in unused)
                    + ", but the query does not use it."
                )
            if invented:
                feedback.append(
                    f"The question does not name {', '.join(invented)}: do not filter on "
                    f"{'it' if len(invented) == 1 else 'them'}."
                )
            copied = [e for e in examples if _holds_any(e.cypher or "", invented)]
            classes = _class_literals(invented)
            if (
                copied
                and self.config.auto_repair
                and not unused
                and len(classes) == len(invented)
                and all(_filters_returned(draft.cypher, c) for c in classes)
            ):
                # a class copied from an example onto the very node the question asks about ("Which object
                # sits lowest?" written for seating only): without it the query is the question's
                draft.cypher, notes = drop_class_filters(draft.cypher, classes)
                state.result.context.setdefault("rewrites", []).extend(notes)
                copied, feedback, invented = [], [], []
            stray = (
                []
                if absent or "stray_links" in state.result.context
                else self._stray_links(draft.cypher, question)
            )
            if stray:
                state.result.context["stray_links"] = stray
                copied += [
                    e for e in examples if e not in copied and any(t in (e.cypher or "") for t in stray)
                ]
                invented = invented + [t if "." in t else f"-[:{t}]-" for t in stray]
            if copied and self.config.auto_repair and attempt + 1 < self._attempts():
                # the filter came from an example the model copied whole: ask again without that example
                examples = [e for e in examples if e not in copied]
                state.messages = [
                    state.messages[0],
                    Message.user(self.user_prompt(question, "qa", links, examples, answer_type)),
                ]
                state.result.tools.append(
                    ToolRecord("cypher_query", draft.cypher, False, error="copied " + ", ".join(invented))
                )
                state.result.context.setdefault("rewrites", []).append(
                    f"{', '.join(invented)} came from an example the question does not match: asked again "
                    "without it"
                )
                continue
            if feedback and self._retry(state, attempt, " ".join(feedback)):
                state.result.context.setdefault("feedback_only", []).append(_normalized(draft.cypher))
                state.result.tools.append(
                    ToolRecord(
                        "cypher_query",
                        draft.cypher,
                        False,
                        error="; ".join(
                            (["ignores " + ", ".join(link.mention for link in unused)] if unused else [])
                            + (["names " + ", ".join(invented)] if invented else [])
                        ),
                    )
                )
                continue
            result, problem = self._execute(state, draft.cypher)
            if result is None:
                if self._retry(state, attempt, problem or "The query failed."):
                    continue
                break
            if not result.rows:
                if is_yes_no_question(question) and answer_type in (None, "string"):
                    self._accept(state, "no")  # nothing matches "Are A and B connected?": no
                    return
                diagnosis = self._empty_diagnosis(draft.cypher, links)
                if diagnosis and self._retry(state, attempt, diagnosis):
                    continue
                counts = answer_type == "number" and (  # "How far ..." with no rows is not 0 m
                    re.search(r"\bcount\s*\(", draft.cypher, re.I)
                    or re.search(r"\bhow many\b", question, re.I)
                )
                self._accept(state, "0" if counts else NOT_FOUND)
                state.result.context["not_found"] = True
                return
            mismatch = shape_mismatch(result, answer_type, question)
            if mismatch:
                # "which sign is highest" returned o.center: run it again returning o.nodeSymbol
                fixed = (
                    symbol_return(draft.cypher)
                    or extreme_return(draft.cypher, question, links)
                    or choice_return(draft.cypher, question)
                )
                if fixed is not None:
                    again, _ = self._execute(state, fixed)
                    if again is not None and again.rows and not shape_mismatch(again, answer_type, question):
                        state.result.context.setdefault("rewrites", []).append(
                            "the question asks which node: returned its nodeSymbol instead"
                        )
                        draft, result, mismatch = _Draft(fixed), again, None
            if mismatch and self._retry(state, attempt, mismatch):
                continue
            answer = format_rows(
                result.columns, result.rows, query=draft.cypher, question=question, answer_type=answer_type
            )
            if answer is None:
                answer = self._answer_from_rows(state, question, draft.cypher, result, answer_type)
            echoed = _echoed(question, answer, links)
            wrong_layer = self._wrong_layer(question, answer, state.hints.get("asked_label")) or echoed
            if wrong_layer and (
                about := self._about_named(state, question, links, answer_type, bool(echoed))
            ):
                answer, wrong_layer = about, None
            if wrong_layer and self._retry(state, attempt, wrong_layer):
                continue
            self._accept(state, answer)
            return
        if state.result.answer is None:
            state.result.error = state.result.error or "no query ran: " + (
                state.result.tools[-1].error if state.result.tools else "the model wrote no query"
            )

    def _question_repairs(self, question: str) -> list[Callable[[str], tuple[str, list[str]]]]:
        """The rewrites of a draft that read the question, in the order they run (each ``query -> (query,
        notes)``)."""
        schema = self.store.schema()
        repairs: list[Callable[[str], tuple[str, list[str]]]] = [
            lambda q: height_for_self_distance(q, question),
            others_for_self_distance,
            lambda q: pick_of_two_named(q, question),
            lambda q: nearest_for_center_equality(q, question),
            lambda q: superlative_for_bound(q, question),
        ]
        if self.config.link_entities:
            repairs.append(lambda q: class_symbol_conflict(q, self.linker().class_of, question))
        repairs.append(lambda q: drop_scope_classes(q, question, schema))
        if _CHOICE.search(question):
            repairs.append(lambda q: choice_from_comparison(q, question))
        return [*repairs, choice_column_only, extreme_in_with]

    def _question_hints(self, question: str, links: Sequence[Link]) -> dict[str, Any]:
        """What the repairs need to know of the question: ``asked_class``, the class "which <noun>" asks for,
        and ``described``, symbol -> class for the named nodes whose class word only describes them ("the
        appliance O10")."""
        classes = {link.value for link in links if link.key == ont.CLASS_KEY}
        asked = asked_classes(_last_question(question), links)
        asked_class = next(iter(asked)) if len(asked) == 1 else None
        asked_label = next(
            (link.label for link in links if link.key == ont.CLASS_KEY and link.value == asked_class), None
        )
        described = {
            link.value: cls
            for link in links
            if link.key == ont.SYMBOL_KEY
            and (cls := self.linker().class_of(link.value)) is not None
            and cls not in classes
        }
        return {"asked_class": asked_class, "asked_label": asked_label, "described": described}

    def _about_named(
        self,
        state: RunState,
        question: str,
        links: Sequence[Link],
        answer_type: str | None,
        echoed: bool,
    ) -> str | None:
        """What is asked of the one node the question names by symbol, where the model's answer was that node
        itself (``echoed``) or of the wrong layer: for "which <its own layer> ..." its neighbours over the
        layer's ``*_CONNECTED`` edges ("Which mesh places can I step to from P2441?"); for "what's on / in it"
        (only when echoed) the objects it holds. Formatted as rows are; None when neither applies or nothing
        comes back."""
        named = [link for link in links if link.key == ont.SYMBOL_KEY]
        if len(named) != 1:
            return None
        node, schema = named[0], self.store.schema()
        linked = ont.sibling_edge_type(node.label)
        match = f"MATCH (n:{node.label} {{{ont.SYMBOL_KEY}: '{node.value}'}})"
        leaf = GraphRoles.from_schema(schema).leaf
        if self._asked_layer(question) == node.label and (node.label, linked, node.label) in schema.patterns:
            query = f"{match}-[:{linked}]-(x:{node.label}) WHERE x <> n RETURN DISTINCT x.{ont.SYMBOL_KEY}"
            what = f"its neighbours over {linked}"
        elif echoed and _HELD.search(_last_question(question)) and leaf is not None and leaf != node.label:
            hop = (
                "-[:CONTAINS]->" if (node.label, ont.CONTAINS, leaf) in schema.patterns else "-[:CONTAINS*]->"
            )
            query = f"{match}{hop}(x:{leaf}) RETURN DISTINCT x.{ont.SYMBOL_KEY}"
            what = f"the {leaf} nodes it holds"
        else:
            return None
        result, _ = self._execute(state, query)
        if result is None or not result.rows:
            return None
        state.result.context.setdefault("rewrites", []).append(
            f"the answer was not what the question asks of {node.value}: returned {what}"
        )
        return format_rows(
            result.columns, result.rows, query=query, question=question, answer_type=answer_type
        )

    def _asked_layer(self, question: str) -> str | None:
        """The label "which <layer> ..." asks for (``MeshPlace`` for "Which mesh places ..."), or None."""
        asked = re.match(r"^\s*(?:which|what)\s+(\w+(?:\s+\w+)?)", _last_question(question), re.I)
        if asked is None:
            return None
        words = asked.group(1).lower()
        return next(
            (
                lab
                for lab in set(self.linker().vocabulary().prefixes.values())
                if re.match(rf"{ont.layer_name(lab).replace('_', ' ')}s?\b(?!\s+to\b)", words)
            ),
            None,
        )

    def _stray_links(self, query: str, question: str) -> list[str]:
        """Room or place link types the query walks although the question says nothing of neighbours, routes
        or moving ("Any shelves in hallway R5?" answered for R5's neighbours, after an example), and distances
        it measures although the question says nothing of distance."""
        stray = []
        if "point.distance" in query.lower() and not _SPATIAL.search(question):
            stray.append("point.distance")  # "Which place is the bike on?" answered as "the nearest ..."
        if _MOVING.search(question):
            return stray
        roles = GraphRoles.from_schema(self.store.schema())
        types = [t for t in (roles.region_link, roles.place_link) if t]
        return stray + [t for t in types if re.search(rf"\[\s*\w*\s*:\s*{t}\b", query)]

    def _wrong_layer(self, question: str, answer: str | None, asked_label: str | None = None) -> str | None:
        """Why ``answer`` is not what "which <layer> ..." asks (None when it is, or the question names no
        layer): "Which mesh place is that box on?" answered with the box's own symbol ``O59``;
        ``asked_label``: the label of the class "which <class>" asks for ("Which storage unit ...")."""
        if answer is None:
            return None
        vocab = self.linker().vocabulary()
        label = self._asked_layer(question) or asked_label
        symbols = re.findall(r"\b[A-Z]{1,2}\d+\b", answer)
        if label is None or not symbols:
            return None
        given = {vocab.prefixes.get(sym[0]) for sym in symbols}
        if label in given or None in given or len(given) != 1:
            return None
        other, layer = given.pop(), ont.layer_name(label).replace("_", " ")
        return (
            f"The question asks which {layer}, but the query returned {other} symbols ({', '.join(symbols[:3])}): "
            f"return the {label} nodes themselves (e.g. the {label} that CONTAINS or is linked to them)."
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

    def _symbol_classes(self, values: Sequence[tuple[str, str, str]]) -> dict[str, str]:
        """The class of each named node among ``values`` ((label, key, value) triples)."""
        symbols = [v for (_, key, v) in values if key == ont.SYMBOL_KEY]
        if not symbols:
            return {}
        rows = self.store.query(
            f"MATCH (n) WHERE n.{ont.SYMBOL_KEY} IN $s RETURN n.{ont.SYMBOL_KEY} AS s, n.{ont.CLASS_KEY} AS c",
            {"s": symbols},
        ).rows
        return {str(r["s"]): str(r["c"]) for r in rows if r.get("c")}

    def _answer_by_example(
        self,
        state: RunState,
        question: str,
        answer_type: str | None,
        links: Sequence[Link],
        examples: Sequence[CypherExample],
    ) -> None:
        """Last resort when no query of the model's ran: the nearest example whose values can be swapped for
        the question's (:func:`adapt_example`) runs instead; the first that returns rows of the asked shape
        answers, and the answer says which example it came from."""
        for example in reversed(examples):  # most similar first
            query = adapt_example(example, links, question, self.linker().kind_of)
            if query is None:
                continue
            result, _ = self._execute(state, query)
            if result is None or not result.rows or shape_mismatch(result, answer_type, question):
                continue
            answer = format_rows(
                result.columns, result.rows, query=query, question=question, answer_type=answer_type
            )
            if answer is not None:
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
        state.result.raw_answer = answer
        state.result.answer = answer
        problems = sldp_problems(answer) if state.result.task == "qa" else self.grounder.problems(answer)
        state.result.error = "; ".join(problems) if problems else None

    # -- PDDL -------------------------------------------------------------------------------------------
    def _class_values(self, name: str) -> set[str]:
        """The class values ``name`` links to ("bike" -> {"bicycle"})."""
        return {link.value for link in self.linker().link(name) if link.key == ont.CLASS_KEY}

    def _classes(self, name: str, kind: str) -> list[str]:
        """Symbols of the nodes of ``kind`` that ``name`` describes: a class ("trash", "wastebin") gives its
        members; a longer description ("box closest to the bicycle") is answered by the QA pipeline."""
        spec = self.domain.kinds.get(kind)
        labels = spec.labels if spec is not None else ()
        phrase = re.sub(r"^(the|a|an|every|all|any)\s+", "", name.strip(), flags=re.I)
        links = self.linker().link(phrase)
        if _describes_more(phrase, links):
            return self._resolve_phrase(phrase, kind, labels)
        values = [phrase.lower().replace(" ", "_")]
        values += [link.value for link in links if link.key == ont.CLASS_KEY]
        for value in dict.fromkeys(values):
            rows = self.store.query(
                "MATCH (n) WHERE n.class = $c RETURN n.nodeSymbol AS s, labels(n) AS l ORDER BY s",
                {"c": value},
                max_rows=500,
            ).rows
            found = [str(r["s"]) for r in rows if not labels or set(_labels(r.get("l"))) & set(labels)]
            if found:
                return found
        return []

    def _resolve_phrase(self, phrase: str, kind: str, labels: Sequence[str]) -> list[str]:
        """Answer "Which <phrase>?" with the QA pipeline (its query is recorded on the current run)."""
        state = self._phrase_state
        sub = self.run(f"Which {phrase}?", task="qa", answer_type="set")
        if state is not None:
            state.result.tools.extend(sub.tools)
            state.result.usage = state.result.usage + sub.usage
            state.result.llm_calls += sub.llm_calls
            state.result.context.setdefault("resolved", {})[phrase] = sub.answer
        if not sub.answer or sub.answer == NOT_FOUND:
            return []
        from scenerag.lang.sldp import SldpSet, SldpString, parse_sldp

        try:
            value = parse_sldp(sub.answer)
        except SceneRagError:
            return []
        items = value.items if isinstance(value, SldpSet) else (value,)
        symbols = [i.value for i in items if isinstance(i, SldpString) and is_symbol(i.value)]
        known = self.grounder.known_symbols(set(symbols))
        return [s for s in symbols if not labels or known.get(s) in labels]

    def _ground(self, state: RunState, links: Sequence[Link]) -> None:
        self._phrase_state = state
        try:
            self._ground_loop(state, links)
        finally:
            self._phrase_state = None

    def _ground_loop(self, state: RunState, links: Sequence[Link]) -> None:
        for attempt in range(self._attempts()):
            draft = self._generate(state, "pddl")
            if not draft.goal:
                if self._retry(
                    state, attempt, "Reply with Goal: (...) and, if it uses ?x, Cypher: ...", "reply"
                ):
                    continue
                break
            problems = (
                sketch_problems(state.result.question, draft, links, self._class_values)
                if attempt == 0
                else []
            )
            if problems and self._retry(
                state, attempt, "That goal does not fit: " + "; ".join(problems) + ".", "reply"
            ):
                state.result.context.setdefault("sketch_feedback", []).extend(problems)
                continue
            bindings: dict[str, list[str]] = {}
            if draft.cypher:
                draft.cypher = self._linked_values(state, draft.cypher, links)
                result, problem = self._execute(state, draft.cypher)
                if result is None:
                    if self._retry(state, attempt, problem or "The query failed.", "reply"):
                        continue
                    break
                for col in result.columns:
                    bindings[col.split(".")[-1]] = [
                        str(r.get(col)) for r in result.rows if r.get(col) is not None
                    ]
                    bindings[col] = bindings[col.split(".")[-1]]
            goal_text = draft.goal
            held = _holding_only(state.result.question, goal_text)
            if held is not None:
                goal_text = held
                state.result.context.setdefault("rewrites", []).append(
                    "a grasp instruction asks for holding only: dropped the visiting alternatives"
                )
            if _AVOID.search(state.result.question) and re.search(r"\(not\s*\(in-room", goal_text):
                goal_text = re.sub(r"\(not\s*\(in-room", "(not (visited-room", goal_text)
                state.result.context.setdefault("rewrites", []).append(
                    "avoiding a room: (not (in-room ...)) became (not (visited-room ...))"
                )
            plural = {
                link.value.lower()
                for link in links
                if link.key == ont.CLASS_KEY and _is_plural(link.mention, link.value)
            }
            try:
                sketch = resolve_sketch(
                    goal_text,
                    self.domain,
                    classes=self._classes,
                    bindings=bindings,
                    plural=lambda name, named=frozenset(plural): bool(
                        {name.lower(), *(v.lower() for v in self._class_values(name))} & named
                    ),
                )
            except SketchError as exc:
                state.result.raw_answer = draft.goal
                state.result.error = f"goal sketch {draft.goal!r}: {exc}"
                if self._retry(state, attempt, f"That goal does not work: {exc}.", "reply"):
                    continue
                return
            state.result.context["sketch"] = draft.goal
            self._accept(state, sketch.goal)
            if state.result.error is None or not self._retry(
                state, attempt, f"That goal does not ground: {state.result.error}.", "reply"
            ):
                return


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


_RELATION_WORDS = re.compile(
    r"\b(closest|nearest|farthest|furthest|near|next|biggest|largest|smallest|highest|lowest|tallest|in|on|"
    r"inside|from|to|with|than|that|which)\b",
    re.I,
)


def _describes_more(phrase: str, links: Sequence[Link]) -> bool:
    """Whether ``phrase`` says more than a class name ("box closest to the bag", "chair in R2")."""
    return bool(_RELATION_WORDS.search(phrase)) or len(links) > 1


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


def _locates_named(question: str, link: Link) -> bool:
    """Whether ``link`` only says where a node named by symbol is ("P1424 *in the lounge*", "P6219 in
    *hallway R2*"): a query about that node need not use it."""
    mention = re.escape(link.mention)
    return (
        re.search(
            rf"\b[A-Z]{{1,2}}\d+\s+(?:is\s+|that\s+is\s+)?(?:in|on|inside|at)\s+(?:the\s+)?(?:[a-z]+\s+)?{mention}\b",
            question,
            re.I,
        )
        is not None
    )


def invented_symbols(query: str, links: Sequence[Link], question: str) -> list[str]:
    """Node symbols the query filters on that the question never named, directly or as a member of a linked
    class ("How many rooms are there?" answered for R1 only)."""
    known = {link.value.lower() for link in links if link.key == ont.SYMBOL_KEY}
    known |= {s.lower() for link in links for s in link.symbols}
    said = {w.lower() for w in re.findall(r"\b[A-Za-z]\d+\b", question)}
    found = dict.fromkeys(v for v in re.findall(r"'([A-Za-z]\d+)'", query))
    return [v for v in found if v.lower() not in known | said]


def swap_invented_symbols(query: str, links: Sequence[Link], question: str) -> tuple[str, list[str]]:
    """An example's symbol copied into the query (``'O249'``) where the question names one symbol of that
    kind that the query leaves out (``O112``): the question's symbol goes in its place. Only a one-for-one
    swap per kind (the letter of the symbol) is made. ``(query, notes)``."""
    invented = invented_symbols(query, links, question)
    unused = [
        link.value
        for link in links
        if link.key == ont.SYMBOL_KEY and not re.search(rf"\b{re.escape(link.value)}\b", query)
    ]
    notes = []
    for kind in dict.fromkeys(v[0].upper() for v in invented):
        wrong = [v for v in invented if v[0].upper() == kind]
        right = [v for v in unused if v[0].upper() == kind]
        if len(wrong) == 1 and len(right) == 1:
            query = re.sub(rf"'{re.escape(wrong[0])}'", f"'{right[0]}'", query)
            notes.append(f"{wrong[0]} is not in the question, {right[0]} is: used {right[0]}")
    return query, notes


_SUPERLATIVE = re.compile(
    r"\b(closest|nearest|farthest|furthest|biggest|largest|smallest|highest|lowest|tallest|shortest)\b", re.I
)
_ORDERED = re.compile(r"\b(then|afterwards|after that|finally|first)\b", re.I)
_AVOID = re.compile(r"\b(without|avoid|avoiding|stay out|stays out|don'?t|do not|never)\b", re.I)


def sketch_problems(
    instruction: str,
    draft: _Draft,
    links: Sequence[Link],
    canonical: Callable[[str], set[str]] | None = None,
) -> list[str]:
    """What a goal sketch misses of its instruction: symbols the instruction never named, linked things it
    leaves out, a superlative without ``?x``, an ordered instruction without a final at-*/in-room, an
    avoidance without ``not`` (each phrased for the model to fix)."""
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
        ):
            problems.append(f"the instruction mentions {link.mention!r}: use [{link.value}]")
    superlative = _SUPERLATIVE.search(instruction)
    if superlative and "?x" not in goal and superlative.group(1).lower() not in goal.lower():
        problems.append(
            f"'{superlative.group(1)}' picks one node: name it in brackets as the instruction does, "
            f"e.g. [box {superlative.group(1).lower()} to the bag]"
        )
    if _ORDERED.search(instruction) and not re.search(r"\((at-|in-room)", goal):
        problems.append("the last step of an ordered instruction is at-*/in-room, the earlier ones visited-*")
    if _AVOID.search(instruction) and not re.search(r"\(\s*not\b", goal):
        problems.append("the instruction says to avoid something: add (not (visited-room ...))")
    if re.search(r"\(not\s*\(in-room", goal):
        problems.append("avoiding a room means never visiting it: (not (visited-room ...)), not in-room")
    grasp = _GRASP.search(instruction)
    if grasp and _holding_only(instruction, goal) is not None:
        problems.append(
            f"'{grasp.group(0)}' asks only for holding it: (holding [...]), not an or with visiting"
        )
    return problems


def _holding_only(instruction: str, goal: str) -> str | None:
    """``(or (holding [bin]) (visited-object [bin]))`` for "Grab a wastebin": the holding alternatives alone
    (one as is, several in an ``or``); None when the goal or the instruction is not of that kind."""
    if not _GRASP.search(instruction) or re.search(r"\bor\b", instruction, re.I):
        return None
    if not re.match(r"\s*\(\s*or\b", goal) or not re.search(r"\(\s*(?:visited|at)-", goal):
        return None
    parts = re.findall(r"\(\s*holding\s+[^()]*\)", goal)
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else "(or " + " ".join(parts) + ")"


_GRASP = re.compile(r"\b(?:grab|pick\s+up|take|hold|carry|fetch|bring|get\s+me)\b", re.I)


_CHOICE = re.compile(
    r"\b(?:more|fewer|less|[a-z]{3,}er)\b[^?]*?\bor\b(?!\s+no\b)(?![^?]*\byes or no\b)", re.I
)
"""A question that asks which of two compared things ("more decorations or more signs", "closer to O3 or to
O7"), which true/false cannot answer."""


def shape_mismatch(result: QueryResult, answer_type: str | None, question: str = "") -> str | None:
    """Why rows cannot hold an answer of ``answer_type`` (None when they can): only numbers where nodes or
    names are asked for, only names where a number is, or true/false where a number is or where the
    question asks which of two compared things."""
    cells = [v for row in result.rows for v in row.values() if v is not None]
    if not cells or answer_type is None:
        return None
    if all(isinstance(v, bool) for v in cells) and (
        answer_type == "number" or re.search(r"\bhow (many|much|far)\b", question, re.I)
    ):
        return "It returned true/false, but the question asks how many or how much: return that number."
    if all(isinstance(v, bool) for v in cells) and answer_type != "number" and _CHOICE.search(question):
        return (
            "It returned true/false, but the question asks which of the two: return that one (its symbol or "
            "class), e.g. ordered by the compared value with LIMIT 1."
        )
    numeric = all(_is_number(v) or (isinstance(v, list) and v and all(map(_is_number, v))) for v in cells)
    asks_which = re.search(r"\bwhich\b|\bwhose\b|\bwhat(?:'s| is) the\b", question, re.I) is not None
    points = all(isinstance(v, dict) and {"x", "y"} <= set(v) for v in cells)
    if (
        answer_type in ("set", "list", "string")
        and points
        and asks_which
        and not re.search(r"\b(where|position|location|coordinates?)\b", question, re.I)
    ):
        return "It returned positions, but the question asks which node: return n.nodeSymbol (ordered if needed)."
    if answer_type in ("set", "list", "string") and numeric and (asks_which or _CHOICE.search(question)):
        return (
            f"It returned only numbers ({result.columns[0]} = {cells[0]}), but the question asks which node or "
            "thing: return n.nodeSymbol (ordered by that number if needed), not the number."
        )
    if answer_type == "number" and not any(isinstance(v, (int, float)) for v in cells) and len(cells) == 1:
        return "It returned a name, but the question asks for a number: return the count or the measure."
    return None


def _last_question(text: str) -> str:
    """The sentence of ``text`` that asks ("Take the box closest to the bike. Which mesh place is it on?"
    -> "Which mesh place is it on?"): the last one starting with which/what, else the whole text."""
    asking = [c for c in re.split(r"(?<=[.:;?!])\s+", text) if re.match(r"\s*(?:which|what)\b", c, re.I)]
    return asking[-1] if asking else text


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


_RETURN_PROPERTY = re.compile(
    r"\bRETURN\s+(DISTINCT\s+)?([A-Za-z_]\w*)\.\w+(?:\.[xyz]|\[\d\])?(?:\s+AS\s+\w+)?(?=\s+ORDER\b|\s+LIMIT\b|\s*$)",
    re.I,
)


def symbol_return(query: str) -> str | None:
    """``query`` returning the node's symbol instead of one of its properties (``RETURN o.center ORDER BY
    o.center.z DESC LIMIT 1`` -> ``RETURN o.nodeSymbol ...``); None when the RETURN is anything else."""
    m = _RETURN_PROPERTY.search(query)
    if m is None or re.search(rf"\.{ont.SYMBOL_KEY}\b", m.group(0)):
        return None
    symbol = f"RETURN {m.group(1) or ''}{m.group(2)}.{ont.SYMBOL_KEY}"
    if re.search(r"\s+AS\s+\w+$", m.group(0), re.I):  # ORDER BY may use the alias: keep it as a column
        symbol += ", " + re.sub(r"(?i)^RETURN\s+(DISTINCT\s+)?", "", m.group(0))
    return query[: m.start()] + symbol + query[m.end() :]


_DISTANCE_BOUND = re.compile(
    r"point\.distance\([^()]*(?:\([^()]*\)[^()]*)*\)\s*[<>]=?\s*(\d+(?:\.\d+)?)", re.I
)


def _holds_any(cypher: str, invented: Sequence[str]) -> bool:
    """Whether an example's Cypher holds one of ``invented`` (``'R2'``/``R2`` values, ``2 m`` distance
    bounds)."""
    for item in invented:
        if item.endswith(" m"):
            bound = float(item[:-2])
            if any(float(m.group(1)) == bound for m in _DISTANCE_BOUND.finditer(cypher)):
                return True
        elif f"'{item.strip(chr(39))}'" in cypher:
            return True
    return False


_MOVING = re.compile(
    r"\b(next|adjacent|neighbou?r\w*|connect\w*|reach\w*|routes?|path\w*|ways?|hops?|steps?|moves?|go|goes|"
    r"going|gets?|walk\w*|enter\w*|through|via|beside|doors?|doorways?|travel\w*|lead\w*|link\w*|join\w*|"
    r"open\w*|pass\w*|cross\w*|between|from|border\w*|touch\w*|around|isolated|dead|apart|far|away)\b",
    re.I,
)
"""Words of a question about neighbours, routes or moving between places."""

_SPATIAL = re.compile(
    r"\b(near\w*|close\w*|far\w*|further|furthest|distance\w*|within|met(?:er|re)s?|m|cm|around|next|"
    r"beside|by|apart|away|radius|reach\w*|closest|position\w*|where|coordinates?|location)\b|\d",
    re.I,
)
"""Words of a question about distances or positions."""

_ORDERED_DISTANCE = re.compile(  # RETURN point.distance(a.center, b.center) AS d ORDER BY d DESC LIMIT 1
    r"\bRETURN\s+(?P<d>point\.distance\(\s*(?P<a>\w+)\.center\s*,\s*(?P<b>\w+)\.center\s*\))\s+AS\s+(?P<al>\w+)"
    r"\s+ORDER\s+BY\s+(?P=al)(?:\s+(?P<dir>DESC|ASC))?\s+LIMIT\s+1\s*;?\s*$",
    re.I | re.S,
)
_EXTREME_DISTANCE = re.compile(
    r"\bRETURN\s+(?P<f>max|min)\s*\(\s*(?P<d>point\.distance\(\s*(?P<a>\w+)\.center\s*,\s*(?P<b>\w+)\.center\s*\))"
    r"\s*\)(?:\s+AS\s+\w+)?(?:\s+ORDER\s+BY\b.*)?\s*;?\s*$",
    re.I | re.S,
)


_HELD = re.compile(
    r"\b(?:on|in|inside|hold|holds|contain|contains|sitting|lying)\b(?!\s+(?:which|what)\b)", re.I
)


def _echoed(question: str, answer: str | None, links: Sequence[Link]) -> str | None:
    """Why ``answer`` repeats the one node the question names ("What's on mesh place P21976?" answered
    ``P21976``), which is never what is asked of it; None otherwise (and for "which of A and B")."""
    named = [link.value for link in links if link.key == ont.SYMBOL_KEY]
    if (
        answer is None
        or len(named) != 1
        or _CHOICE.search(question)
        or re.search(r"\bwhich of\b", question, re.I)
    ):
        return None
    if answer.strip("<>[] ") != named[0]:
        return None
    return (
        f"It returned {named[0]}, the node the question names itself: return what the question asks about "
        f"{named[0]} (e.g. the nodes it CONTAINS, is linked to, or lies near)."
    )


_HEAD_END = re.compile(
    r"\b(?:in|on|at|near|inside|from|to|of|with|that|which|who|where|closest|nearest|farthest|furthest)\b",
    re.I,
)


def asked_classes(question: str, links: Sequence[Link]) -> set[str]:
    """The classes "which <noun>" asks for (``{'trash'}`` for "Which trash can is ..."; only the head
    noun: "which seats in the lounge" asks for seats, not lounges); for "which one", the classes named before
    it ("Of all the decorations, which one ..."), for "which of the X", the X."""
    which = re.search(
        r"\b(?:which|what)\s+(.+?)(?:\s+(?:is|are|was|lies|stands|sits)\b|[?,]|$)", question, re.I
    )
    if which is None:
        return set()
    words = which.group(1).lower()
    classes = [link for link in links if link.key == ont.CLASS_KEY]
    if re.match(r"(?:one|ones)\b", words):
        before = question[: which.start()].lower()
        return {link.value for link in classes if link.mention.lower() in before}
    words = re.sub(r"^of\s+(?:the\s+|these\s+|those\s+)?", "", words)
    head = words[: m.start()] if (m := _HEAD_END.search(words)) else words
    return {
        link.value
        for link in classes
        if link.mention.lower() in head or re.search(rf"\b{link.value}\b", head)
    }


def extreme_return(query: str, question: str, links: Sequence[Link]) -> str | None:
    """``RETURN max(point.distance(a.center, b.center))`` for "Which trash can is the farthest from the
    food?": the node the question asks for (the one whose class the words after "which" name), ordered by
    that distance (``RETURN a.nodeSymbol ORDER BY ... DESC LIMIT 1``); None when that node is unclear."""
    m = _EXTREME_DISTANCE.search(query) or _ORDERED_DISTANCE.search(query)
    asked = asked_classes(question, links)
    if m is None or not asked:
        return None
    targets = [
        var
        for var in dict.fromkeys((m.group("a"), m.group("b")))
        if (cls := re.search(rf"\(\s*{var}\s*:\s*\w+\s*\{{[^}}]*\bclass\s*:\s*'([^']*)'", query))
        and cls.group(1) in asked
    ]
    if len(targets) != 1:
        return None
    extreme = (m.groupdict().get("f") or m.groupdict().get("dir") or "ASC").lower()
    order = "DESC" if extreme in ("max", "desc") else "ASC"
    return f"{query[: m.start()]}RETURN {targets[0]}.nodeSymbol ORDER BY {m.group('d')} {order} LIMIT 1"


_DISTANCE_TERM = (
    r"(?:(?:min|max)\s*\(\s*)?point\.distance\(\s*(?P<{0}>\w+)\.center\s*,\s*(?P<{1}>\w+)\.center\s*\)\s*\)?"
    r"(?:\s+AS\s+\w+)?"
)
_TWO_DISTANCES = re.compile(
    r"\bRETURN\s+" + _DISTANCE_TERM.format("a1", "b1") + r"\s*,\s*" + _DISTANCE_TERM.format("a2", "b2"), re.I
)


def choice_return(query: str, question: str) -> str | None:
    """Two distances returned for "Is the bag closer to the bed or to O237?" (``RETURN point.distance(a, b),
    point.distance(a, c)``): the closer (or, for "farther", the farther) of the two, by symbol; None for
    other queries and questions."""
    m = _TWO_DISTANCES.search(query)
    if m is None or not _CHOICE.search(question):
        return None
    first, second = {m.group("a1"), m.group("b1")}, {m.group("a2"), m.group("b2")}
    shared = first & second
    if len(shared) != 1 or len(first) != 2 or len(second) != 2:
        return None
    if re.search(r"\b(?:farther|further|more\s+distant)\b", question, re.I):
        wins = ">"
    elif re.search(r"\b(?:closer|nearer)\b", question, re.I):
        wins = "<"
    else:
        return None
    (ref,) = shared
    (x,), (y,) = first - shared, second - shared
    d1, d2 = (f"point.distance({ref}.center, {v}.center)" for v in (x, y))
    return (
        f"{query[: m.start()]}RETURN CASE WHEN {d1} {wins} {d2} THEN {x}.nodeSymbol ELSE {y}.nodeSymbol END "
        "AS choice"
    )


def _class_literals(invented: Sequence[str]) -> list[str]:
    """The class values among :meth:`CypherAgent._invented`'s findings (quoted there: ``'seating'``)."""
    return [v[1:-1] for v in invented if v.startswith("'")]


def _filters_returned(query: str, value: str) -> bool:
    """Whether ``query`` filters on class ``value`` a node its RETURN clause returns or counts."""
    ret = re.search(r"\bRETURN\b((?:(?!\bORDER\b|\bLIMIT\b).)*)", query, re.I | re.S)
    if ret is None:
        return False
    quoted = re.escape(value)
    holders = {
        m.group(1) for m in re.finditer(rf"\(\s*(\w+)\s*:\s*\w+\s*\{{[^}}]*\bclass\s*:\s*'{quoted}'", query)
    } | {m.group(1) for m in re.finditer(rf"\b(\w+)\.class\s*=\s*'{quoted}'", query)}
    return bool(holders) and all(re.search(rf"\b{h}\b", ret.group(1)) for h in holders)


_REFERS_BACK = re.compile(r"\b(?:those|these|that|this|them|such)\b", re.I)
_CENTER_OF = re.compile(r"\b(?:center|centre|middle)\s+of\b", re.I)


def _measured_from_center(question: str, links: Sequence[Link]) -> bool:
    """Whether the question measures from a named node's center ("within 10 m of the center of hallway R5")
    without also asking for what is inside a named node ("in R5")."""
    return bool(_CENTER_OF.search(question)) and not any(
        re.search(rf"\b(?:in|inside)\s+(?:the\s+)?(?:\w+\s+)?{re.escape(link.mention)}\b", question, re.I)
        for link in links
    )


def _symbols_of(answer: str | None) -> list[str]:
    """The node symbols an answer consists of (``O3``, ``<R3, R5>``); empty when it holds anything else."""
    if not answer:
        return []
    items = [i.strip() for i in answer.strip().strip("<>[]").split(",") if i.strip()]
    return items if items and all(is_symbol(i) for i in items) else []


def _absorb(result: AgentResult, earlier: AgentResult) -> None:
    """Count what ``earlier`` (a split call or a step that came before) spent into ``result``."""
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


def _normalized(query: str) -> str:
    return " ".join(query.split()).rstrip(";").lower()


def _is_plural(mention: str, value: str) -> bool:
    """ "hallways" for hallway, "chairs" for seating; not "wastebin" for trash, "glass" for glass."""
    m, v = mention.lower(), value.lower()
    return m != v and m.endswith("s") and not m.endswith("ss") and not v.endswith("s")


def _labels(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]
