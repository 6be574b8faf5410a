"""``SceneUpdateAgent``: turn a natural-language correction ("the bicycle is actually a bag") into Cypher
write statements. It reads the graph with the read-only ``cypher_query`` tool to find the nodes, then
answers with the write; applying it (and journaling it for undo) is the caller's decision.
"""

from __future__ import annotations

from scenerag.agents import prompts
from scenerag.agents.base import RunState
from scenerag.agents.result import AgentResult, Task
from scenerag.agents.tool_cypher_agent import ToolCallingCypherAgent
from scenerag.store.cypher import analyze


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


class SceneUpdateAgent(ToolCallingCypherAgent):
    """A Cypher agent whose final answer is the write that makes the requested change."""

    @property
    def name(self) -> str:
        return "scene-update"

    def _task_rules(self, task: Task) -> str:
        return (
            "Task: the user corrects or updates the scene graph. First find the nodes concerned with read "
            "queries. Then give as the final answer only the Cypher write statement(s) that make the change, "
            "separated by ';', matching nodes by nodeSymbol, e.g. MATCH (o:Object {nodeSymbol: 'O12'}) SET "
            "o.class = 'bag'. Change only what was asked; keep nodeSymbol values unique."
        )

    def system_prompt(self, task: Task) -> str:
        return "\n\n".join(
            [
                "You maintain a robot's 3D scene graph stored in a graph database, using Cypher.",
                prompts.SCENE_GRAPH_PRIMER,
                self._schema_part(),
                prompts.CYPHER_RULES.replace(
                    "read-only (MATCH, WHERE, WITH, UNWIND, RETURN)", "read-only queries"
                ),
                self._task_rules(task),
            ]
        )

    def answer_problems(self, answer: str, task: Task) -> list[str]:
        statements = split_statements(answer)
        if not statements:
            return ["the answer holds no Cypher statement"]
        problems = []
        for s in statements:
            a = analyze(s)
            if not a.write_clauses:
                problems.append(f"'{s[:80]}' does not write (use SET, CREATE, MERGE, DELETE or REMOVE)")
            if a.procedures:
                problems.append(f"'{s[:80]}' calls a procedure; use plain Cypher")
        return problems

    def is_tool_input(self, text: str) -> bool:
        """A read query given as the answer is run as a lookup; a write is the answer itself."""
        return super().is_tool_input(text) and not any(
            analyze(s).write_clauses for s in split_statements(text)
        )

    def run_update(self, instruction: str) -> AgentResult:
        """Run the agent on ``instruction``; the answer (when valid) is the write script."""
        return self.run(instruction, task="qa")

    def _accept(self, state: RunState, raw: str, task: Task) -> list[str]:
        state.result.raw_answer = raw
        state.result.answer = raw.strip().strip("`").removeprefix("cypher").strip()
        problems = self.answer_problems(state.result.answer, task)
        state.result.error = "; ".join(problems) if problems else None
        return problems
