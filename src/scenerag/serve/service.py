"""``SceneService``: the operations the HTTP API and the MCP tools expose, over one shared store.

Contract: every operation is safe to call from many threads at once; reads share the store, a write
(``cypher(..., write=True)``, only when the server allows writes) runs alone. Every store query — the
client's, and those agents, retrieval and planning make — goes through the same admission control
(:mod:`scenerag.serve.admission`): validated first, then a slot in its lane, cancelled at its deadline.
Agents (``ask``, ``ground``) and retrieval only ever see a :class:`~scenerag.serve.store_access.ReadOnlyStore`,
so nothing a model writes — whatever the graph's text tells it — can change the data. Query limits are the
server's. :meth:`SceneService.health` never touches the store nor waits for a query.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scenerag.agents.result import AgentResult, Task
from scenerag.serve.admission import Admission
from scenerag.serve.config import AgentMode, ServerConfig
from scenerag.serve.errors import ServiceError
from scenerag.serve.llm_provider import ChatModelProvider, LlmSource
from scenerag.serve.store_access import StoreAccess
from scenerag.serve.subgraph import RetrievedSubgraph, SubgraphRetriever
from scenerag.store.base import CypherStore, QueryResult
from scenerag.store.schema import GraphSchema

if TYPE_CHECKING:
    from scenerag.planning import PlanResult
    from scenerag.retrieval import EntityStore

MAX_SEARCH_HITS = 100


@dataclass
class GroundOutcome:
    """A PDDL goal and whether every symbol of it grounds; ``run`` is the agent run that wrote it, if any."""

    goal: str | None
    grounded: bool
    problems: list[str]
    run: AgentResult | None = None


class SceneService:
    """Cypher, schema, question answering, grounding, planning and subgraph retrieval over one store."""

    def __init__(
        self,
        store: CypherStore,
        config: ServerConfig | None = None,
        *,
        llm: LlmSource = None,
        entity_store: EntityStore | None = None,
    ) -> None:
        self.config = config or ServerConfig()
        self.config.validate()
        self.store = store
        cfg = self.config
        self.admission = Admission(cfg.query_slots, heavy_slots=cfg.heavy_slots, queue_limit=cfg.queue_limit)
        self.access = StoreAccess(
            store,
            timeout_s=cfg.query_timeout_s,
            max_rows=cfg.max_rows,
            admission=self.admission,
            heavy_rows=cfg.heavy_rows,
        )
        self.models = ChatModelProvider(llm, max_waiting=cfg.agent_queue)
        self.retriever = SubgraphRetriever(entity_store)
        self._counts: tuple[int, int] = (0, 0)
        self._refresh_counts()

    def _refresh_counts(self) -> None:
        """Node and relationship totals for ``health`` (from the store's cached schema)."""
        schema = self.store.schema()
        self._counts = (sum(schema.node_counts.values()), sum(schema.rel_counts.values()))

    def warm_up(self, *, on_model_ready: Callable[[], None] | None = None) -> None:
        """Start loading the model (when given as a spec; ``on_model_ready`` is called once it loaded) and
        warm the parser (the engine's first parse costs ~0.2-1 s); when the engine runs in this process
        (embedded ArcadeDB), also its query paths for ``config.warm_up_s`` (:meth:`StoreAccess.warm_up`),
        so the first requests meet compiled code. A remote database (Bolt) is warm already and shared, so
        it is not sent warm-up queries. Called once when a server starts, before it listens."""
        self.models.preload(on_ready=on_model_ready)
        with contextlib.suppress(Exception):
            self.store.prepare("MATCH (n) RETURN count(n) AS n")
        if self.store.backend == "arcadedb-embedded":
            self.access.warm_up(self.config.warm_up_s)

    # -- helpers ----------------------------------------------------------------------------------------
    def _text(self, value: str | None, what: str) -> str:
        text = (value or "").strip()
        if not text:
            raise ServiceError("bad_request", f"{what} is empty")
        if len(text) > self.config.max_text_chars:
            raise ServiceError(
                "bad_request",
                f"{what} is too long ({len(text)} characters; the limit is {self.config.max_text_chars})",
            )
        return text

    # -- operations -------------------------------------------------------------------------------------
    def cypher(
        self,
        query: str,
        params: Mapping[str, Any] | None = None,
        *,
        write: bool = False,
        timeout_s: float | None = None,
        max_rows: int | None = None,
        arrival: float | None = None,
        caps: tuple[float, int] | None = None,
    ) -> QueryResult:
        """Run ``query``: read-only unless ``write`` is asked for and the server allows writes. Its deadline
        counts from ``arrival`` (``time.monotonic()`` when the request came in; default now); ``caps``
        replace the server's (timeout s, rows) for a trusted caller (the database owner's CLI)."""
        if write:
            if not self.config.allow_write:
                raise ServiceError(
                    "write_disabled",
                    "this server does not accept writes",
                    status=403,
                    hint="start the server with writes allowed (scenerag serve --allow-write)",
                )
            try:
                return self.access.write(
                    query, params, timeout_s=timeout_s, max_rows=max_rows, arrival=arrival
                )
            finally:
                self._refresh_counts()
        return self.access.read(
            query, params, timeout_s=timeout_s, max_rows=max_rows, arrival=arrival, caps=caps
        )

    def schema(self) -> GraphSchema:
        return self.access.schema()

    def _agent(self, model: Any, mode: AgentMode | None, max_tool_calls: int | None) -> Any:
        from scenerag.agents import CypherAgent, CypherAgentConfig

        cap = self.config.agent_max_tool_calls
        calls = cap if max_tool_calls is None else max(1, min(int(max_tool_calls), cap))
        config = CypherAgentConfig(
            mode=mode or self.config.agent_mode,
            max_tool_calls=calls,
            query_timeout_s=self.config.query_timeout_s,
            max_rows=min(200, self.config.max_rows),
        )
        return CypherAgent(model, self.access.read_only(), config)

    def ask(
        self,
        question: str,
        *,
        task: Task = "qa",
        answer_type: str | None = None,
        mode: AgentMode | None = None,
        max_tool_calls: int | None = None,
    ) -> AgentResult:
        """Answer ``question`` (or ground it, ``task="pddl"``) with the Cypher agent over read-only access."""
        text = self._text(question, "the question")
        if task not in ("qa", "pddl"):
            raise ServiceError("bad_request", f"task must be 'qa' or 'pddl' (got {task!r})")
        with self.models.session() as model:
            return self._agent(model, mode, max_tool_calls).run(text, task=task, answer_type=answer_type)

    def ground(
        self,
        *,
        instruction: str | None = None,
        goal: str | None = None,
        mode: AgentMode | None = None,
        max_tool_calls: int | None = None,
    ) -> GroundOutcome:
        """Ground an ``instruction`` to a PDDL goal with the agent, or check a given ``goal``; exactly one."""
        from scenerag.agents import PddlGrounder

        if (instruction is None) == (goal is None):
            raise ServiceError(
                "bad_request", "give exactly one of 'instruction' (to ground) or 'goal' (to check)"
            )
        grounder = PddlGrounder(self.access.read_only())
        if goal is not None:
            text = self._text(goal, "the goal")
            problems = grounder.problems(text)
            return GroundOutcome(text, not problems, problems)
        run = self.ask(
            self._text(instruction, "the instruction"), task="pddl", mode=mode, max_tool_calls=max_tool_calls
        )
        if run.answer is None or not run.answer.strip():
            return GroundOutcome(None, False, [run.error or "the agent produced no goal"], run)
        problems = grounder.problems(run.answer)
        return GroundOutcome(run.answer, not problems, problems, run)

    def plan(
        self,
        goal: str,
        *,
        start: str | Sequence[float] | None = None,
        time_limit_s: float | None = None,
    ) -> PlanResult:
        """Plan for a PDDL ``goal`` (check it with :meth:`ground` first) from ``start`` (a node symbol, an
        (x, y, z) position, or None for the Agent) with Fast Downward over the graph read from the store."""
        from scenerag.lang.pddl_goal import GoalParseError, goal_symbols
        from scenerag.planning import graph_from_store, plan_for_goal

        text = self._text(goal, "the goal")
        try:
            symbols = set(goal_symbols(text))
        except GoalParseError as exc:
            raise ServiceError(
                "bad_request", str(exc), hint="write a PDDL goal such as (visited-room R2)"
            ) from exc
        if isinstance(start, str):
            symbols.add(start)
        elif start is not None and len(start) != 3:
            raise ServiceError("bad_request", "start must be a node symbol or an [x, y, z] position")
        cfg = self.config
        limit = (
            cfg.plan_time_limit_s if time_limit_s is None else min(float(time_limit_s), cfg.plan_time_limit_s)
        )
        reader = self.access.read_only(caps=(cfg.plan_read_timeout_s, cfg.plan_max_rows))
        graph = graph_from_store(reader, symbols, timeout_s=cfg.plan_read_timeout_s)
        return plan_for_goal(graph, text, start=start, time_limit_s=limit)

    def retrieve_subgraph(
        self,
        text: str,
        *,
        k: int = 10,
        labels: Sequence[str] | None = None,
        ancestors: bool = True,
    ) -> RetrievedSubgraph:
        """The nodes ``text`` is about and the subgraph they induce with their CONTAINS ancestors."""
        query = self._text(text, "the search text")
        if not 1 <= k <= MAX_SEARCH_HITS:
            raise ServiceError("bad_request", f"k must be within 1..{MAX_SEARCH_HITS} (got {k})")
        return self.retriever.retrieve(
            self.access.read_only(),
            query,
            k=k,
            labels=labels,
            ancestors=ancestors,
            timeout_s=self.config.query_timeout_s,
        )

    def load(self) -> dict[str, Any]:
        """Queries running and queued, and the model's state: public, cheap, never waits for a query."""
        stats = self.admission.stats()
        return {
            "running": stats["running"],
            "queued": stats["queued"],
            "slots": stats["slots"],
            "llm": self.models.status(),
        }

    def health(self) -> dict[str, Any]:
        """Backend, counts (as of the last schema read), settings and per-lane admission figures; never
        touches the store nor waits for a query."""
        nodes, relationships = self._counts
        return {
            "status": "ok",
            "backend": getattr(self.store, "backend", type(self.store).__name__),
            "nodes": nodes,
            "relationships": relationships,
            "writes_allowed": self.config.allow_write,
            "llm": self.models.description,
            "search": self.retriever.mode,
            "auth": self.config.token is not None,
            "admission": self.admission.stats(),
        }
