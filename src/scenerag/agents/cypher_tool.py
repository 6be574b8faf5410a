"""The ``cypher_query`` tool the agents call: a read-only, time-limited, row-capped query whose result is
summarised to a token budget before it re-enters the prompt.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from scenerag.agents.query_repair import repair_query
from scenerag.agents.result import ToolRecord
from scenerag.errors import SceneRagError
from scenerag.graph.ontology import has_symbol_shape as is_symbol
from scenerag.llm.base import ToolSpec, estimate_tokens
from scenerag.store.base import GraphStore, QueryResult
from scenerag.store.cypher import tokenize

CYPHER_TOOL = ToolSpec(
    name="cypher_query",
    description=(
        "Run one read-only Cypher query (Neo4j dialect) against the 3D scene graph database and get its rows "
        "back (or the database error to fix)."
    ),
    parameters={
        "type": "object",
        "properties": {"query": {"type": "string", "description": "The Cypher query."}},
        "required": ["query"],
    },
)


def _round(value: Any) -> Any:
    """Round floats to 4 decimals (answers are compared within 0.01) to save tokens."""
    if isinstance(value, float):
        return round(value, 4)
    if isinstance(value, dict):
        return {k: _round(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_round(v) for v in value]
    return value


def result_symbols(rows: Any) -> list[str]:
    """Node symbols found anywhere in query rows, in order of appearance."""
    found: dict[str, None] = {}
    _symbols(rows, found)
    return list(found)


def ran_record(query: str, result: QueryResult, *, ran: str | None = None) -> ToolRecord:
    """The record of a query that ran: its row count, truncation, time and the symbols in its rows."""
    return ToolRecord(
        "cypher_query",
        query,
        True,
        rows=len(result.rows),
        truncated=result.truncated,
        elapsed_ms=result.elapsed_ms,
        symbols=result_symbols(result.rows),
        ran=ran,
    )


def _symbols(value: Any, out: dict[str, None]) -> None:
    if is_symbol(value):
        out.setdefault(value, None)
    elif isinstance(value, dict):
        sym = value.get("nodeSymbol")
        if isinstance(sym, str):
            out.setdefault(sym, None)
        for v in value.values():
            _symbols(v, out)
    elif isinstance(value, list):
        for v in value:
            _symbols(v, out)


def summarize_rows(result: QueryResult, budget_tokens: int, count_tokens: Callable[[str], int]) -> str:
    """Rows as compact JSON lines, as many as fit ``budget_tokens``, then a note of what was left out.

    The note names the total so the model knows the result was cut and can aggregate or add LIMIT.
    """
    if not result.rows:
        return "(no rows)"
    lines: list[str] = []
    used = 0
    for row in result.rows:
        line = json.dumps(_round(row), separators=(",", ":"), ensure_ascii=False)
        cost = count_tokens(line) + 1
        if lines and used + cost > budget_tokens:
            break
        lines.append(line)
        used += cost
    shown = len(lines)
    total = f"{len(result.rows)}+" if result.truncated else str(len(result.rows))
    if shown < len(result.rows) or result.truncated:
        lines.append(
            f"... {shown} of {total} rows shown; the rest were cut. Aggregate (count/collect) or add LIMIT "
            "if you need all of them."
        )
    else:
        lines.append(f"({shown} row{'s' if shown != 1 else ''})")
    return "\n".join(lines)


class CypherTool:
    """Runs agent-written Cypher on a ``GraphStore`` (read-only) and records each call.

    ``budget_tokens`` caps the size of a result shown to the model; errors come back as the store's
    readable message (syntax position, unknown names with suggestions, refused writes, timeouts).
    """

    def __init__(
        self,
        store: GraphStore,
        *,
        budget_tokens: int = 400,
        timeout_s: float = 10.0,
        max_rows: int = 200,
        count_tokens: Callable[[str], int] = estimate_tokens,
        auto_repair: bool = True,
    ) -> None:
        self.auto_repair = auto_repair
        self.store = store
        self.budget_tokens = budget_tokens
        self.timeout_s = timeout_s
        self.max_rows = max_rows
        self.count_tokens = count_tokens

    def _empty_hint(self, query: str) -> str:
        """For an empty result: string literals that are not stored values but differ only in case or plural
        ('Lounge' vs 'lounge') — the commonest reason a correct-looking query returns nothing."""
        schema = self.store.schema()
        notes = []
        for tok in tokenize(query):
            if tok.kind != "string":
                continue
            literal = tok.text[1:-1]
            owner = schema.value_owner(literal)
            if owner is not None and owner[2] != literal:
                notes.append(
                    f"'{literal}' is not a stored value; did you mean '{owner[2]}' ({owner[0]}.{owner[1]})?"
                )
        return ("\nNote: " + " ".join(dict.fromkeys(notes))) if notes else ""

    def run(self, query: str) -> tuple[str, ToolRecord]:
        """Execute ``query``; return the text for the model and the record of the call."""
        query = (query or "").strip().strip("`").strip()
        if query.lower().startswith("cypher\n"):
            query = query[7:].strip()
        ran, notes = repair_query(query, self.store.schema()) if self.auto_repair else (query, [])
        prefix = f"Auto-corrected ({'; '.join(notes)}); ran: {ran}\n" if notes else ""
        try:
            result = self.store.query(ran, read_only=True, timeout_s=self.timeout_s, max_rows=self.max_rows)
        except SceneRagError as exc:
            text = f"{prefix}ERROR: {exc}"
            record = ToolRecord(
                "cypher_query", query, False, error=str(exc), result_tokens=self.count_tokens(text)
            )
            record.ran = ran if notes else None
            return text, record
        text = prefix + summarize_rows(result, self.budget_tokens, self.count_tokens)
        if not result.rows:
            text += self._empty_hint(ran)
        record = ran_record(query, result, ran=ran if notes else None)
        record.result_tokens = self.count_tokens(text)
        return text, record
