"""Server settings and the security rules checked before the server binds.

Contract: :func:`check_bind` refuses to serve off loopback without a bearer token (a
:class:`ServerConfigError` naming the fix); every limit in :class:`ServerConfig` is enforced by the server,
whatever a request asks for (requests may only lower the query timeout and the row cap).
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass
from typing import Literal

from scenerag.errors import SceneRagError
from scenerag.serve.cost import HEAVY_ROWS

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
TOKEN_ENV = "SCENERAG_TOKEN"
LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})
MIN_TOKEN_CHARS = 16

AgentMode = Literal["agentic", "feedforward"]


class ServerConfigError(SceneRagError):
    """The server cannot start with these settings (e.g. off-loopback without a token)."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an IPv4/IPv6 address) only accepts connections from this machine."""
    text = host.strip().strip("[]").lower()
    if text in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(text).is_loopback
    except ValueError:
        return False


@dataclass
class ServerConfig:
    """Limits and switches of one server; every field is enforced server-side."""

    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    #: bearer token clients must send (``Authorization: Bearer <token>``); required off loopback
    token: str | None = None
    #: the database owner's token (written 0600 into the database folder, see scenerag.serve.share): its
    #: requests pass auth and the rate limit and get the planner's caps (still read-only unless writes are on)
    owner_token: str | None = None
    #: let ``POST /cypher`` run writes when the request also asks for them (``"write": true``)
    allow_write: bool = False
    #: largest request body accepted (413 above)
    max_body_bytes: int = 1 << 20
    #: token bucket per client address: sustained requests per second (None: no rate limit)
    rate_limit_per_s: float | None = 20.0
    #: token bucket capacity (requests a client may send in a burst)
    rate_limit_burst: int = 40
    #: upper bound of any query's run time and row count (requests may ask for less); the time counts from
    #: the request's arrival, queueing included
    query_timeout_s: float = 10.0
    max_rows: int = 1000
    #: admission control: store queries run at once (None: the cores), of which heavy ones at most
    #: ``heavy_slots`` (None: half), and how many may wait in the cheap lane (None: 8 per slot; the heavy
    #: lane a quarter of that)
    query_slots: int | None = None
    heavy_slots: int | None = None
    queue_limit: int | None = None
    #: estimated intermediate rows above which a query is heavy (see scenerag.serve.cost)
    heavy_rows: float = HEAVY_ROWS
    #: questions (/ask, /ground) that may wait for the shared model; more get 503
    agent_queue: int = 4
    #: agent settings for /ask and /ground (requests may lower ``agent_max_tool_calls``)
    agent_mode: AgentMode = "agentic"
    agent_max_tool_calls: int = 5
    #: planning (/plan): the planner's time limit, and the caps of the reads that build its graph
    plan_time_limit_s: float = 30.0
    plan_read_timeout_s: float = 120.0
    plan_max_rows: int = 10_000_000
    #: longest question / instruction / search text accepted, in characters
    max_text_chars: int = 4000
    #: serve the MCP streamable-HTTP endpoint at /mcp next to the HTTP API
    mcp: bool = True
    #: seconds a starting server spends running its own queries before it listens, so the first clients
    #: do not meet a cold engine (see ``StoreAccess.warm_up``; 0: no warm-up)
    warm_up_s: float = 2.0

    def validate(self) -> None:
        """Raise ``ServerConfigError`` for a field out of range."""
        checks = [
            (0 <= self.port <= 65535, "port must be 0..65535 (0: any free port)"),
            (self.max_body_bytes > 0, "max_body_bytes must be positive"),
            (
                self.rate_limit_per_s is None or self.rate_limit_per_s > 0,
                "rate_limit_per_s must be > 0 or None",
            ),
            (self.rate_limit_burst >= 1, "rate_limit_burst must be >= 1"),
            (self.query_timeout_s > 0, "query_timeout_s must be positive"),
            (self.max_rows > 0, "max_rows must be positive"),
            (self.agent_max_tool_calls >= 1, "agent_max_tool_calls must be >= 1"),
            (self.agent_mode in ("agentic", "feedforward"), "agent_mode must be agentic or feedforward"),
            (self.max_text_chars > 0, "max_text_chars must be positive"),
            (self.query_slots is None or self.query_slots >= 1, "query_slots must be >= 1"),
            (
                self.heavy_slots is None or 1 <= self.heavy_slots <= (self.query_slots or self.heavy_slots),
                "heavy_slots must be within 1..query_slots",
            ),
            (self.queue_limit is None or self.queue_limit >= 0, "queue_limit must be >= 0"),
            (self.heavy_rows > 0, "heavy_rows must be positive"),
            (self.agent_queue >= 0, "agent_queue must be >= 0"),
            (self.plan_time_limit_s > 0, "plan_time_limit_s must be positive"),
            (self.plan_read_timeout_s > 0 and self.plan_max_rows > 0, "plan read limits must be positive"),
        ]
        for ok, message in checks:
            if not ok:
                raise ServerConfigError(f"invalid server setting: {message}")


def package_version() -> str:
    """The installed scenerag version (``"0"`` when running from a source tree without metadata)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("scenerag")
    except PackageNotFoundError:
        return "0"


def resolve_token(token: str | None) -> str | None:
    """``token`` or, when None, the ``SCENERAG_TOKEN`` environment variable (empty means none)."""
    value = token if token is not None else os.environ.get(TOKEN_ENV)
    value = (value or "").strip()
    return value or None


def check_bind(config: ServerConfig) -> None:
    """Refuse settings that would expose the database unauthenticated or with a guessable token."""
    config.validate()
    if config.token is not None and len(config.token) < MIN_TOKEN_CHARS:
        raise ServerConfigError(
            f"the bearer token is too short ({len(config.token)} characters; at least {MIN_TOKEN_CHARS})",
            hint='generate one with: python -c "import secrets; print(secrets.token_urlsafe(32))"',
        )
    if not is_loopback(config.host) and not config.token:
        raise ServerConfigError(
            f"refusing to serve on {config.host!r} without a bearer token: anyone on the network could "
            "query the scene graph",
            hint=f"pass a token (--token or ${TOKEN_ENV}) or bind {DEFAULT_HOST}",
        )
