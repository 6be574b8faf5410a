"""Request and response bodies of the HTTP API (pydantic; they make the OpenAPI schema at ``/openapi.json``)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from scenerag.agents.result import AgentResult

#: longest Cypher query accepted (the body size limit applies as well)
MAX_QUERY_CHARS = 20_000


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CypherRequest(_Request):
    """A Cypher query (Neo4j dialect). Read-only unless ``write`` is set and the server allows writes."""

    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS, description="The Cypher query.")
    params: dict[str, Any] = Field(default_factory=dict, description="Values of the query's $parameters.")
    write: bool = Field(False, description="Ask to run a write (403 unless the server allows writes).")
    timeout_s: float | None = Field(None, gt=0, description="Lower the server's query timeout.")
    max_rows: int | None = Field(None, gt=0, description="Lower the server's row cap.")


class CypherResponse(BaseModel):
    columns: list[str]
    rows: list[dict[str, Any]]
    truncated: bool = Field(description="More rows existed than max_rows.")
    max_rows: int | None
    elapsed_ms: float
    notices: list[str] = Field(
        default_factory=list, description="Rewrites the store made (e.g. bounded paths)."
    )


class SchemaResponse(BaseModel):
    schema_: dict[str, Any] = Field(
        alias="schema", description="Labels, relationship types, properties, counts."
    )
    text: str = Field(description="The schema as rendered into LLM prompts.")
    known_classes: dict[str, list[str]] = Field(
        default_factory=dict, description="Classes the graph's perception can name, per label."
    )

    model_config = ConfigDict(populate_by_name=True)


class AskRequest(_Request):
    question: str = Field(min_length=1, description="A question about the scene graph.")
    task: Literal["qa", "pddl"] = Field("qa", description="qa: answer in SLDP; pddl: ground to a PDDL goal.")
    answer_type: Literal["set", "list", "dict", "point", "number", "string"] | None = None
    mode: Literal["agentic", "feedforward"] | None = None
    max_tool_calls: int | None = Field(None, ge=1, description="Lower the server's query budget.")
    include_transcript: bool = Field(False, description="Return the full message transcript.")


class QueryRecord(BaseModel):
    """One query an agent ran."""

    tool: str
    input: str
    ok: bool
    rows: int
    truncated: bool
    error: str | None
    elapsed_ms: float
    symbols: list[str]
    ran: str | None = Field(None, description="What actually ran when the query was auto-corrected.")


class Usage(BaseModel):
    input_tokens: int
    output_tokens: int


class AskResponse(BaseModel):
    method: str
    question: str
    task: Literal["qa", "pddl"]
    answer: str | None
    error: str | None
    symbols: list[str] = Field(description="Node symbols of the answer, then those the queries returned.")
    queries: list[QueryRecord]
    usage: Usage
    llm_calls: int
    wall_s: float
    transcript: list[dict[str, Any]] | None = None

    @classmethod
    def from_result(cls, result: AgentResult, *, include_transcript: bool = False) -> AskResponse:
        return cls(
            method=result.method,
            question=result.question,
            task=result.task,
            answer=result.answer,
            error=result.error,
            symbols=result.symbols,
            queries=[
                QueryRecord(
                    tool=t.tool,
                    input=t.input,
                    ok=t.ok,
                    rows=t.rows,
                    truncated=t.truncated,
                    error=t.error,
                    elapsed_ms=round(t.elapsed_ms, 3),
                    symbols=t.symbols,
                    ran=t.ran,
                )
                for t in result.tools
            ],
            usage=Usage(input_tokens=result.usage.input_tokens, output_tokens=result.usage.output_tokens),
            llm_calls=result.llm_calls,
            wall_s=round(result.wall_s, 4),
            transcript=result.transcript if include_transcript else None,
        )


class GroundRequest(_Request):
    """Exactly one of ``instruction`` (an LLM grounds it) or ``goal`` (checked as given)."""

    instruction: str | None = Field(None, min_length=1, description="An instruction for the robot.")
    goal: str | None = Field(None, min_length=1, description="A PDDL goal to check, e.g. (visited-room R2).")
    mode: Literal["agentic", "feedforward"] | None = None
    max_tool_calls: int | None = Field(None, ge=1)


class GroundResponse(BaseModel):
    goal: str | None
    grounded: bool = Field(description="The goal parses, fits the domain and every symbol exists.")
    problems: list[str]
    run: AskResponse | None = None


class PlanRequest(_Request):
    goal: str = Field(min_length=1, description="A PDDL goal, e.g. (and (visited-room R2) (holding O5)).")
    start: str | list[float] | None = Field(
        None, description="Start: a node symbol or [x, y, z]; default: the latest Agent node's place."
    )
    time_limit_s: float | None = Field(None, gt=0, description="Lower the server's planner time limit.")


class PlanResponse(BaseModel):
    status: Literal["solved", "unsolvable", "timeout", "error"]
    steps: list[str] = Field(description="The plan as readable lines.")
    plan: list[dict[str, Any]] = Field(description="The plan as actions with arguments.")
    cost: int | None
    validated: bool = Field(description="The plan was checked step by step against the problem.")
    message: str
    elapsed_s: float


class RetrieveRequest(_Request):
    text: str = Field(min_length=1, description="What to look for, e.g. 'signs in the lounge'.")
    k: int = Field(10, ge=1, le=100, description="How many nodes the search returns.")
    labels: list[str] | None = Field(
        None, description="Only search nodes with these labels, e.g. ['Object']."
    )
    ancestors: bool = Field(True, description="Add the CONTAINS ancestors of every hit.")


class Hit(BaseModel):
    symbol: str
    label: str
    class_: str = Field(alias="class")
    score: float
    matched: str

    model_config = ConfigDict(populate_by_name=True)


class Edge(BaseModel):
    source: str
    type: str
    target: str


class RetrieveResponse(BaseModel):
    search: Literal["semantic", "lexical"]
    hits: list[Hit]
    nodes: list[dict[str, Any]] = Field(
        description="Hits and ancestors: symbol, label and stored properties."
    )
    edges: list[Edge]


class HealthResponse(BaseModel):
    status: Literal["ok"]
    version: str
    load: dict[str, Any] | None = Field(
        None,
        description="Store queries running and queued, query slots, and the language model's state "
        "(none, loading, ready, failed).",
    )
    details: dict[str, Any] | None = Field(
        None, description="Backend, counts and settings (only for authenticated clients when auth is on)."
    )


class ErrorBody(BaseModel):
    kind: str
    message: str
    hint: str | None = None
    query: str | None = None
    line: int | None = None
    column: int | None = None
    suggestions: list[str] | None = None
    details: list[dict[str, Any]] | None = None
    retry_after_s: int | None = None


class ErrorResponse(BaseModel):
    error: ErrorBody
