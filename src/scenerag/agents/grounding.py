"""Ground PDDL goals in a scene graph: every symbol must exist in the database with a label of the kind
the predicate expects (object, place, room). Problems are phrased for an LLM to fix.
"""

from __future__ import annotations

from scenerag.errors import SceneRagError
from scenerag.lang.pddl_goal import (
    HERACLES_DOMAIN,
    GoalDomain,
    GoalParseError,
    check_goal,
    goal_symbols,
    parse_goal,
)
from scenerag.progress import SILENT, StageProgress
from scenerag.store.base import GraphStore

LOOKUP = "MATCH (n) WHERE n.nodeSymbol IN $symbols RETURN n.nodeSymbol AS s, labels(n) AS l"


class GroundingError(SceneRagError):
    """A goal that does not ground: ``problems`` lists each issue (unknown symbol, wrong kind, syntax...)."""

    def __init__(self, goal: str, problems: list[str]) -> None:
        self.goal = goal
        self.problems = problems
        super().__init__(f"goal {goal!r} does not ground: " + "; ".join(problems))


def symbol_spellings(symbol: str) -> list[str]:
    """The symbol and its case variants (Hydra uses P for mesh places and p for 3D places)."""
    variants = [symbol, symbol.upper(), symbol.lower(), symbol[:1].swapcase() + symbol[1:]]
    return list(dict.fromkeys(variants))


class PddlGrounder:
    """Checks goals against ``domain`` and the live database of ``store``."""

    def __init__(
        self,
        store: GraphStore,
        domain: GoalDomain = HERACLES_DOMAIN,
        *,
        progress: StageProgress | None = None,
    ) -> None:
        self.store = store
        self.domain = domain
        self.progress = progress or SILENT

    def known_symbols(self, symbols: set[str]) -> dict[str, str]:
        """``{symbol: label}`` for those of ``symbols`` (or their case variants) present in the database."""
        if not symbols:
            return {}
        wanted = sorted({v for s in symbols for v in symbol_spellings(s)})
        rows = self.store.query(LOOKUP, {"symbols": wanted}, max_rows=len(wanted) + 10).rows
        out: dict[str, str] = {}
        for row in rows:
            labels = row.get("l") or []
            label = labels[0] if isinstance(labels, list) and labels else str(labels)
            out[str(row["s"])] = label
        return out

    def problems(self, goal_text: str) -> list[str]:
        """Readable problems of ``goal_text``; empty when it parses, fits the domain and every symbol grounds."""
        self.progress.stage("checking goal")
        try:
            goal = parse_goal(goal_text, self.domain)
        except GoalParseError as exc:
            return [str(exc)]
        known = self.known_symbols(goal_symbols(goal))
        return [str(p) for p in check_goal(goal, self.domain, known)]

    def ground(self, goal_text: str) -> str:
        """Return ``goal_text`` when it grounds; raise ``GroundingError`` listing the problems otherwise."""
        problems = self.problems(goal_text)
        if problems:
            raise GroundingError(goal_text, problems)
        return goal_text
