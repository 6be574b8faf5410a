"""``SceneUpdateAgent``: turn a natural-language correction ("the bicycle is actually a bag") into Cypher
write statements, through the same pipeline as the Cypher agent, within a total time limit.

Pipeline (each stage reported to ``progress``, see :mod:`scenerag.progress`):

1. **link** the instruction's mentions to stored values and symbols (:class:`~scenerag.agents.linking.
   EntityLinker`: "the bicycle" -> Object class 'bicycle' (O43));
2. **examples**: four worked corrections generated from the live graph (relabel, remove, add, move), so
   the prompt shows this graph's own labels, symbols and containment;
3. **generate** the write in one plain-text reply (a short static system prompt with the schema, a
   per-instruction user turn);
4. **check** it: every statement must write, call no procedure, use labels of the graph, and match nodes
   that exist by symbols the instruction or its links named; problems are sent back once (``max_attempts``).

Applying the write (and journaling it for undo) is the caller's decision: the agent only reads the graph.

Time: with ``timeout_s`` the whole run (linking included) happens on a daemon worker thread and
:meth:`SceneUpdateAgent.run_update` returns at the limit at the latest, with ``error`` saying so and
``context["timed_out"] = True``; the worker may still be using the model and the store then, so a process
that stops at that point should exit without waiting for it (the CLI does).
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scenerag.agents import prompts
from scenerag.agents.base import RunState
from scenerag.agents.result import AgentResult
from scenerag.errors import SceneRagError
from scenerag.graph import ontology as ont
from scenerag.llm.base import ChatModel, LLMError, Message
from scenerag.progress import SILENT, StageProgress
from scenerag.store.base import GraphStore
from scenerag.store.cypher import analyze

if TYPE_CHECKING:
    from scenerag.agents.linking import EntityLinker, Link
    from scenerag.retrieval.embeddings import Embedder

#: the CLI's default total time limit of ``scenerag update`` (seconds)
DEFAULT_UPDATE_TIMEOUT_S = 60.0
_STOP = ("\n\n", "\nUpdate:", "<|im_end|>", "```\n")
_QUOTED_SYMBOL = re.compile(r"nodeSymbol\s*(?::|=)\s*'([^']*)'")
_SYMBOL_WORD = re.compile(r"\b[A-Za-z]\d+\b")
_CREATE = re.compile(r"\b(CREATE|MERGE)\b", re.I)


def split_statements(text: str) -> list[str]:
    """Statements of a ``;``-separated Cypher script (semicolons inside strings are kept)."""
    out, buf, quote = [], [], ""
    for ch in text:
        if quote:
            buf.append(ch)
            if ch == quote:
                quote = ""
        elif ch in ("'", '"'):
            quote = ch
            buf.append(ch)
        elif ch == ";":
            out.append("".join(buf).strip())
            buf = []
        else:
            buf.append(ch)
    out.append("".join(buf).strip())
    return [s.strip("`").strip() for s in out if s.strip("`").strip()]


def clean_reply(text: str) -> str:
    """The Cypher of a model reply: code fences, a ``cypher`` tag and a ``Cypher:`` prefix removed."""
    text = text.strip()
    fence = re.search(r"```(?:cypher)?\s*\n?(.*?)(?:```|$)", text, re.S | re.I)
    if fence:
        text = fence.group(1).strip()
    text = re.sub(r"^(?:cypher\s*:?\s*)", "", text, flags=re.I).strip()
    return " ".join(line.strip() for line in text.splitlines() if line.strip())


@dataclass
class SceneUpdateConfig:
    """Settings of the update agent."""

    #: replies per instruction (the first plus corrections after a failed check)
    max_attempts: int = 2
    max_reply_tokens: int = 160
    #: embedder spec for linking words no rule knows ("none": rules and word overlap only)
    embedder: str = "minilm"
    link_entities: bool = True


@dataclass
class _Roles:
    """What the worked examples are made of, read from the live graph."""

    leaf: str
    container: str | None
    node: str | None
    cls: str | None
    other_cls: str
    place: str | None
    other_place: str | None
    new_symbol: str


class SceneUpdateAgent:
    """Writes the Cypher that makes a requested change to the graph in ``store`` (see module docstring).

    ``linker`` / ``embedder`` override the ones built from the store (share them between agents)."""

    name = "scene-update"

    def __init__(
        self,
        model: ChatModel,
        store: GraphStore,
        config: SceneUpdateConfig | None = None,
        *,
        linker: EntityLinker | None = None,
        embedder: Embedder | None = None,
        progress: StageProgress | None = None,
    ) -> None:
        self.model = model
        self.store = store
        self.config = config or SceneUpdateConfig()
        self.progress = progress or SILENT
        self._linker = linker
        self._embedder = embedder

    # -- components -------------------------------------------------------------------------------------
    def linker(self) -> EntityLinker:
        from scenerag.agents.linking import EntityLinker

        if self._linker is None:
            embedder = self._embedder
            if embedder is None and self.config.embedder.lower() not in ("", "none"):
                from scenerag.retrieval.embeddings import make_embedder

                try:
                    embedder = make_embedder(self.config.embedder)
                except (SceneRagError, ImportError):
                    embedder = None  # linking by rules and word overlap
            self._linker = EntityLinker(self.store, embedder=embedder)
        return self._linker

    def _roles(self) -> _Roles:
        schema = self.store.schema()
        chains = [c for c in schema.containment_chains() if len(c) >= 2]
        # the edited things are objects where the graph has them (not, say, a KeySG object's handles)
        if ont.OBJECT in schema.node_counts:
            leaf = ont.OBJECT
        else:
            leaf = chains[0][-1] if chains else (schema.labels[0] if schema.labels else ont.OBJECT)
        container = next((c[c.index(leaf) - 1] for c in chains if leaf in c[1:]), None)
        info = schema.node_properties.get(leaf, {}).get(ont.CLASS_KEY)
        classes = list(info.values or []) if info is not None else []
        node = cls = place = other_place = None
        if container is not None:
            rows = self.store.query(
                f"MATCH (p:{container})-[:CONTAINS]->(n:{leaf}) RETURN p.nodeSymbol AS p, n.nodeSymbol AS n, "
                "n.class AS c ORDER BY n LIMIT 1"
            ).rows
            if rows:
                place, node, cls = rows[0]["p"], rows[0]["n"], rows[0]["c"]
                others = self.store.query(
                    f"MATCH (p:{container}) WHERE p.nodeSymbol <> $p RETURN p.nodeSymbol AS p ORDER BY p LIMIT 1",
                    {"p": place},
                ).rows
                other_place = others[0]["p"] if others else None
        if node is None:
            rows = self.store.query(
                f"MATCH (n:{leaf}) RETURN n.nodeSymbol AS n, n.class AS c ORDER BY n LIMIT 1"
            ).rows
            if rows:
                node, cls = rows[0]["n"], rows[0]["c"]
        other_cls = next((c for c in ("box", "cup", "bag", "chair") if c != cls and c not in classes), "box")
        if classes:
            other_cls = next((c for c in classes if c != cls), other_cls)
        return _Roles(
            leaf, container, node, cls, other_cls, place, other_place, self._free_symbol(leaf, node)
        )

    def _free_symbol(self, label: str, sample: str | None) -> str:
        """A symbol no node has, with the prefix letter of ``sample`` (the layer's symbols)."""
        letter = sample[0] if sample else label[:1].upper() or "N"
        count = int(self.store.query(f"MATCH (n:{label}) RETURN count(n) AS n").rows[0]["n"])
        candidates = [f"{letter}{count + 1000 + i}" for i in range(20)]
        taken = {
            r["s"]
            for r in self.store.query(
                "MATCH (n) WHERE n.nodeSymbol IN $c RETURN n.nodeSymbol AS s", {"c": candidates}
            ).rows
        }
        return next(c for c in candidates if c not in taken)

    def examples(self, roles: _Roles | None = None) -> list[tuple[str, str]]:
        """Worked (instruction, write) pairs built from the live graph: relabel, remove, add, move."""
        r = roles or self._roles()
        if r.node is None:
            return []
        leaf, node, cls = r.leaf, r.node, r.cls or "thing"
        out = [
            (
                f"The {cls} {node} is actually a {r.other_cls}.",
                f"MATCH (n:{leaf} {{nodeSymbol: '{node}'}}) SET n.class = '{r.other_cls}'",
            ),
            (f"{node} is gone.", f"MATCH (n:{leaf} {{nodeSymbol: '{node}'}}) DETACH DELETE n"),
        ]
        if r.container and r.place:
            out.append(
                (
                    f"There is a new {r.other_cls} in {r.place}.",
                    f"MATCH (p:{r.container} {{nodeSymbol: '{r.place}'}}) CREATE (p)-[:CONTAINS]->(:{leaf} "
                    f"{{nodeSymbol: '{r.new_symbol}', class: '{r.other_cls}', center: p.center}})",
                )
            )
            if r.other_place:
                out.append(
                    (
                        f"The {cls} {node} is now in {r.other_place}.",
                        f"MATCH (:{r.container})-[c:CONTAINS]->(n:{leaf} {{nodeSymbol: '{node}'}}) DELETE c; "
                        f"MATCH (p:{r.container} {{nodeSymbol: '{r.other_place}'}}), (n:{leaf} {{nodeSymbol: "
                        f"'{node}'}}) CREATE (p)-[:CONTAINS]->(n)",
                    )
                )
        return out

    # -- prompts ----------------------------------------------------------------------------------------
    def system_prompt(self) -> str:
        return "\n\n".join(
            [
                "You turn corrections of a robot's 3D scene graph into Neo4j Cypher write statements.",
                prompts.schema_block(self.store.schema()),
                "Rules: match nodes by nodeSymbol; kinds of things are values of the class property, never "
                "labels. Change only what was asked. Separate several statements with ';'.\n"
                "Reply with the Cypher only, on one line.",
            ]
        )

    def user_prompt(
        self, instruction: str, links: list[Link], examples: list[tuple[str, str]], new_symbol: str
    ) -> str:
        parts = []
        if examples:
            parts.append("Examples:\n" + "\n\n".join(f"Update: {q}\nCypher: {c}" for q, c in examples))
        facts = [link.describe() for link in links]
        facts.append(f"a new node gets symbol {new_symbol}")
        parts.append("In this graph: " + "; ".join(facts) + ".")
        parts.append(f"Update: {instruction}\nCypher:")
        return "\n\n".join(parts)

    # -- checks -----------------------------------------------------------------------------------------
    def answer_problems(self, script: str, allowed: set[str] | None = None) -> list[str]:
        """What is wrong with ``script`` as the write (empty when it may be applied). ``allowed``: the
        symbols the instruction and its links named (others are copied from an example); None: any."""
        statements = split_statements(script)
        if not statements:
            return ["the reply holds no Cypher statement"]
        schema = self.store.schema()
        problems: list[str] = []
        matched: set[str] = set()
        for s in statements:
            a = analyze(s)
            if not a.write_clauses:
                problems.append(f"'{s[:80]}' does not write (use SET, CREATE, MERGE, DELETE or REMOVE)")
            if a.procedures:
                problems.append(f"'{s[:80]}' calls a procedure; use plain Cypher")
            unknown = [label for label in dict.fromkeys(a.labels) if label not in schema.node_counts]
            if unknown and schema.node_counts:
                problems.append(
                    f"unknown label(s) {', '.join(unknown)}: labels are {', '.join(schema.labels)}; kinds "
                    "of things are class values"
                )
            head = _CREATE.split(s, maxsplit=1)[0]  # symbols before CREATE/MERGE must exist
            matched.update(_QUOTED_SYMBOL.findall(head))
        if matched:
            found = {
                r["s"]
                for r in self.store.query(
                    "MATCH (n) WHERE n.nodeSymbol IN $s RETURN n.nodeSymbol AS s", {"s": sorted(matched)}
                ).rows
            }
            missing = sorted(matched - found)
            if missing:
                problems.append(f"no node has symbol {', '.join(missing)}")
            if allowed is not None:
                copied = sorted((matched & found) - allowed)
                if copied:
                    problems.append(f"the update does not name {', '.join(copied)} (copied from an example?)")
        return problems

    # -- run --------------------------------------------------------------------------------------------
    def run_update(self, instruction: str, *, timeout_s: float | None = None) -> AgentResult:
        """The write for ``instruction`` as ``answer`` (None with ``error`` when there is none); with
        ``timeout_s``, returns within that many seconds (see module docstring)."""
        if timeout_s is None:
            return self._run(instruction)
        if timeout_s <= 0:
            raise ValueError(f"the update time limit must be positive (got {timeout_s:g} s)")
        done: dict[str, Any] = {}
        start = time.perf_counter()

        def work() -> None:
            try:
                done["result"] = self._run(instruction)
            except BaseException as exc:  # handed to the caller's thread below
                done["error"] = exc

        worker = threading.Thread(target=work, name="scenerag-update", daemon=True)
        worker.start()
        worker.join(timeout_s)
        if "error" in done:
            raise done["error"]
        if "result" in done:
            return done["result"]
        result = AgentResult(self.name, instruction, "qa", None)
        result.error = f"no write within the time limit ({timeout_s:g} s)"
        result.context["timed_out"] = True
        result.wall_s = time.perf_counter() - start
        self.progress.stage("timed out")
        return result

    def _run(self, instruction: str) -> AgentResult:
        start = time.perf_counter()
        state = RunState(AgentResult(self.name, instruction, "qa", None))
        try:
            links: list[Link] = []
            if self.config.link_entities:
                self.progress.stage("linking")
                links = self.linker().link(instruction)
            self.progress.stage("examples")
            roles = self._roles()
            examples = self.examples(roles)
            state.result.context.update(
                links=[link.describe() for link in links], examples=[q for q, _ in examples]
            )
            allowed = set(_SYMBOL_WORD.findall(instruction))
            for link in links:
                allowed.update(link.symbols)
                if link.key == ont.SYMBOL_KEY:
                    allowed.add(link.value)
            state.messages = [
                Message.system(self.system_prompt()),
                Message.user(self.user_prompt(instruction, links, examples, roles.new_symbol)),
            ]
            for attempt in range(max(1, self.config.max_attempts)):
                resp = self.model.chat(
                    state.messages,
                    max_tokens=self.config.max_reply_tokens,
                    stop=list(_STOP),
                    temperature=0.0 if attempt == 0 else 0.5,
                    seed=attempt,
                )
                state.add_usage(resp.usage)
                reply = resp.message.content
                state.messages.append(Message.assistant(reply.strip()))
                script = clean_reply(reply)
                self.progress.stage("checking write")
                problems = self.answer_problems(script, allowed)
                state.result.raw_answer = reply
                state.result.answer = script or None
                state.result.error = "; ".join(problems) if problems else None
                if not problems:
                    break
                state.messages.append(
                    Message.user(f"That write does not work: {'; '.join(problems)}.\nWrite a corrected one.")
                )
        except LLMError as exc:
            state.result.error = str(exc)
        self.progress.stage("answer")
        state.result.wall_s = time.perf_counter() - start
        return state.finish()
