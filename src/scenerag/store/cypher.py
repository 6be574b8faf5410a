"""Client-side analysis of Cypher text: write clauses, procedure calls, names used, variable-length hops.

This is a lexer plus a pattern reader, not a full parser: it is exact for the things it reports (tokens
outside strings and comments) and conservative elsewhere. The database stays the judge of syntax.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

WRITE_KEYWORDS = frozenset(
    {
        "CREATE",
        "MERGE",
        "SET",
        "DELETE",
        "DETACH",
        "REMOVE",
        "DROP",
        "FOREACH",
        "LOAD",
        "ALTER",
        "GRANT",
        "REVOKE",
        "DENY",
        "RENAME",
        "TERMINATE",
    }
)

# Procedures that only read: allowed in read-only mode.
READ_ONLY_PROCEDURES = frozenset(
    {
        "db.labels",
        "db.relationshiptypes",
        "db.propertykeys",
        "db.schema.visualization",
        "db.schema.nodetypeproperties",
        "db.schema.reltypeproperties",
        "db.indexes",
        "db.constraints",
        "db.index.fulltext.querynodes",
        "db.index.fulltext.queryrelationships",
        "db.index.vector.querynodes",
        "db.index.vector.queryrelationships",
        "dbms.components",
    }
)

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<comment>//[^\n]*|/\*.*?\*/)
  | (?P<string>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
  | (?P<bq>`(?:[^`]|``)*`)
  | (?P<param>\$[A-Za-z_][A-Za-z0-9_]*|\$[0-9]+)
  | (?P<number>\d+\.\d+(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|\d+(?:[eE][+-]?\d+)?)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>\.\.|<>|<=|>=|=~|->|<-|[-+*/%^=<>(){}\[\]:,.|;&!])
  | (?P<other>.)
    """,
    re.VERBOSE | re.DOTALL,
)


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # ident, string, param, number, op, other
    text: str  # identifier name without backticks for quoted identifiers
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class VarLength:
    """A variable-length relationship ``[:T*lo..hi]``; ``hi`` is None when unbounded."""

    types: tuple[str, ...]
    lower: int
    upper: int | None
    start: int  # offset of '*'
    end: int  # offset just past the range


@dataclass
class CypherAnalysis:
    """What a query touches; filled by :func:`analyze`."""

    write_clauses: list[str] = field(default_factory=list)
    procedures: list[str] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    rel_types: list[str] = field(default_factory=list)
    node_vars: dict[str, set[str]] = field(default_factory=dict)
    rel_vars: dict[str, set[str]] = field(default_factory=dict)
    property_refs: list[tuple[str, str]] = field(default_factory=list)  # (variable, key)
    pattern_keys: list[tuple[str, frozenset[str], str]] = field(default_factory=list)  # (kind, labels, key)
    var_lengths: list[VarLength] = field(default_factory=list)

    @property
    def is_write(self) -> bool:
        return bool(self.write_clauses)

    @property
    def unbounded(self) -> list[VarLength]:
        return [v for v in self.var_lengths if v.upper is None]


def tokenize(query: str) -> list[Token]:
    """Tokens outside whitespace and comments; string literals keep their quotes."""
    out: list[Token] = []
    for m in _TOKEN.finditer(query):
        kind = m.lastgroup or "other"
        if kind in ("ws", "comment"):
            continue
        text = m.group()
        if kind == "bq":
            kind, text = "ident", text[1:-1].replace("``", "`")
        out.append(Token(kind, text, m.start(), m.end()))
    return out


def analyze(query: str) -> CypherAnalysis:
    """Report write clauses, procedure calls, labels, types, property keys and var-length hops."""
    toks = tokenize(query)
    a = CypherAnalysis()
    n = len(toks)
    brace_stack: list[str] = []  # 'map' for map literals / pattern properties, 'sub' for CALL { } blocks

    def is_op(i: int, text: str) -> bool:
        return 0 <= i < n and toks[i].kind == "op" and toks[i].text == text

    def ident(i: int) -> str | None:
        return toks[i].text if 0 <= i < n and toks[i].kind == "ident" else None

    def read_labels(i: int, sep: tuple[str, ...]) -> tuple[list[str], int]:
        names: list[str] = []
        while is_op(i, ":") or (names and any(is_op(i, s) for s in sep)):
            i += 1
            if is_op(i, ":"):
                i += 1
            name = ident(i)
            if name is None:
                break
            names.append(name)
            i += 1
        return names, i

    def read_pattern_map(i: int, kind: str, labels: frozenset[str]) -> int:
        # i points at '{'; record keys at depth 1 of this map.
        depth = 0
        expect_key = True
        while i < n:
            t = toks[i]
            if t.kind == "op" and t.text in "{[(":
                depth += 1
                expect_key = t.text == "{" and depth == 1
            elif t.kind == "op" and t.text in "}])":
                depth -= 1
                if depth == 0:
                    return i
            elif depth == 1 and t.kind == "op" and t.text == ",":
                expect_key = True
            elif depth == 1 and expect_key and t.kind == "ident" and is_op(i + 1, ":"):
                a.pattern_keys.append((kind, labels, t.text))
                expect_key = False
            i += 1
        return i

    i = 0
    while i < n:
        t = toks[i]
        upper = t.text.upper() if t.kind == "ident" else ""
        prev_dot = is_op(i - 1, ".")
        in_map_key = bool(brace_stack) and brace_stack[-1] == "map" and is_op(i + 1, ":")
        if t.kind == "ident" and not prev_dot and not in_map_key:
            if upper in WRITE_KEYWORDS:
                a.write_clauses.append(upper)
            elif upper == "CALL" and not is_op(i + 1, "{") and not is_op(i + 1, "("):
                j, parts = i + 1, []
                while ident(j) is not None:
                    parts.append(toks[j].text)
                    if is_op(j + 1, "."):
                        j += 2
                    else:
                        j += 1
                        break
                if parts:
                    a.procedures.append(".".join(parts))
            elif upper == "IN" and ident(i + 1) and ident(i + 1).upper() == "TRANSACTIONS":  # type: ignore[union-attr]
                a.write_clauses.append("IN TRANSACTIONS")
        if t.kind == "op" and t.text == "{":
            brace_stack.append(
                "sub"
                if (
                    i > 0
                    and ident(i - 1)
                    and toks[i - 1].text.upper() in ("CALL", "EXISTS", "COUNT", "COLLECT")
                )
                else "map"
            )
        elif t.kind == "op" and t.text == "}":
            if brace_stack:
                brace_stack.pop()
        elif (
            t.kind == "op"
            and t.text == "("
            and not (i > 0 and toks[i - 1].kind == "ident" and not _is_clause_word(toks[i - 1].text))
        ):
            # Node pattern (or parenthesised expression): [var] [:Label...] [{map}]
            j = i + 1
            var = ident(j) if not is_op(j + 1, "(") and not is_op(j + 1, ".") else None
            if var is not None:
                j += 1
            labels, j = read_labels(j, ("|", "&"))
            if var is not None and (labels or is_op(j, ")") or is_op(j, "{")):
                a.node_vars.setdefault(var, set()).update(labels)
            a.labels.extend(labels)
            if labels and is_op(j, "{"):
                read_pattern_map(j, "node", frozenset(labels))
            elif var is not None and not labels and is_op(j, "{"):
                read_pattern_map(j, "node", frozenset())
        elif t.kind == "op" and t.text == "[" and (is_op(i - 1, "-") or is_op(i - 1, "<-")):
            j = i + 1
            var = ident(j)
            if var is not None and not is_op(j + 1, "(") and not is_op(j + 1, "."):
                j += 1
            else:
                var = None
            types, j = read_labels(j, ("|",))
            a.rel_types.extend(types)
            if var is not None:
                a.rel_vars.setdefault(var, set()).update(types)
            if is_op(j, "*"):
                star = toks[j]
                j += 1
                lower, upper_b, end = 1, None, star.end
                if j < n and toks[j].kind == "number":
                    lower = int(float(toks[j].text))
                    upper_b = lower
                    end = toks[j].end
                    j += 1
                if is_op(j, ".."):
                    upper_b = None
                    end = toks[j].end
                    j += 1
                    if j < n and toks[j].kind == "number":
                        upper_b = int(float(toks[j].text))
                        end = toks[j].end
                        j += 1
                a.var_lengths.append(VarLength(tuple(types), lower, upper_b, star.start, end))
            if is_op(j, "{"):
                read_pattern_map(j, "rel", frozenset(types))
        elif (
            t.kind == "ident"
            and not prev_dot
            and is_op(i + 1, ".")
            and ident(i + 2) is not None
            and not is_op(i + 3, "(")
        ):
            a.property_refs.append((t.text, toks[i + 2].text))
        elif (
            t.kind == "ident"
            and not prev_dot
            and not in_map_key
            and is_op(i + 1, ":")
            and ident(i + 2)
            and not (brace_stack and brace_stack[-1] == "map")
            and not (is_op(i - 1, "[") or is_op(i - 1, "("))
        ):
            # Label predicate in WHERE: n:Label
            labels, _ = read_labels(i + 1, ("|", "&"))
            a.labels.extend(labels)
            a.node_vars.setdefault(t.text, set())
        i += 1
    # property refs only count for variables bound by patterns
    return a


def _is_clause_word(word: str) -> bool:
    """Words after which '(' opens a pattern or expression, not a function call."""
    return word.upper() in {
        "MATCH",
        "WHERE",
        "RETURN",
        "WITH",
        "AND",
        "OR",
        "NOT",
        "XOR",
        "CREATE",
        "MERGE",
        "OPTIONAL",
        "UNWIND",
        "IN",
        "AS",
        "DISTINCT",
        "CASE",
        "WHEN",
        "THEN",
        "ELSE",
        "DELETE",
        "SET",
    }


def bound_var_lengths(query: str, bounds: list[tuple[VarLength, int]]) -> str:
    """Rewrite each unbounded ``*`` / ``*lo..`` in ``bounds`` to ``*lo..hi``; other text is unchanged."""
    out, last = [], 0
    for v, hi in sorted(bounds, key=lambda b: b[0].start):
        out.append(query[last : v.start])
        out.append(f"*{v.lower}..{max(hi, v.lower)}")
        last = v.end
    out.append(query[last:])
    return "".join(out)


_POS_ARCADE = re.compile(r"line (\d+):(\d+)")
_POS_NEO4J = re.compile(r"line (\d+), column (\d+)")


def error_position(message: str) -> tuple[int, int] | None:
    """(line, 1-based column) of a syntax error, from ArcadeDB's or Neo4j's message."""
    m = _POS_NEO4J.search(message)
    if m:
        return int(m.group(1)), int(m.group(2))
    m = _POS_ARCADE.search(message)
    if m:
        return int(m.group(1)), int(m.group(2)) + 1  # ArcadeDB reports 0-based columns
    return None


def caret_excerpt(query: str, line: int, column: int) -> str:
    """The offending line with a caret under ``column`` (1-based)."""
    lines = query.splitlines() or [query]
    if not 1 <= line <= len(lines):
        return ""
    text = lines[line - 1]
    return f"{text}\n{' ' * max(column - 1, 0)}^"
