"""Who may call what (NFR-SEC): API keys bound to scopes, access levels per method, and the
token bucket that limits a key's rate.

A key names, per scope id field, the values it may use: an exact id, a prefix pattern
(``"alice-*"``) or ``"*"`` (any); a field it does not name cannot be used. A call reaches
exactly the scopes whose ids it names (a search with ``user_id`` and ``agent_id`` reads the
user's memories and the agent's shared ones), so checking every id a call names checks all it
can reach. Access levels:

- ``read``: the methods that only read (search, get, list, history, export, stages, tasks,
  errors, costs of an agent or a task, ...);
- ``write``: also every method that changes memories of its scopes;
- ``admin``: also ``memory.clear``, cost reports for everyone, and any scope.

A call is ``FORBIDDEN`` when its method needs more than the key's access, or when it names a
scope id (at the top level, in a batch's ``items``, an import's ``records`` or a store
batch's ``ops``) that the key does not allow. A store batch needs write access when an op puts,
and admin when an op names no scope id (it reaches every scope's items). A call that names no
scope id
(``memory.job.get``, ``rpc.discover``) needs only the access. ``memory.stage.get`` must name
its task (a stage id alone would reach any task's stage).
"""

from __future__ import annotations

import hashlib
import hmac
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

from agentcore.domain.errors import ConfigurationError, Forbidden
from agentcore.domain.models import ScopeLevel

SCOPE_FIELDS = tuple(level.id_field for level in ScopeLevel)
ANY = "*"


class Access(IntEnum):
    READ = 1
    WRITE = 2
    ADMIN = 3


READ_METHODS = frozenset(
    {
        "rpc.discover",
        "memory.health",
        "memory.search",
        "memory.get",
        "memory.list",
        "memory.history",
        "memory.export",
        "memory.get_value",
        "memory.list_keys",
        "memory.search_keys",
        "memory.episodes.list",
        "memory.episodes.get",
        "memory.episodes.search",
        "memory.procedure.search",
        "memory.working.get",
        "memory.stage.current",
        "memory.stage.get",
        "memory.task.progress",
        "memory.task.context",
        "memory.job.get",
        "memory.error.history",
        "memory.error.patterns",
        "memory.cost.report",
        "memory.ace.strategic_context",
        "memory.ace.interventions",
        "memory.route_context",
        "memory.artifact.list",
        "memory.context",
    }
)
ADMIN_METHODS = frozenset({"memory.clear"})
STORE_BATCH = "memory.store.batch"  # its ``ops`` decide (``required_access``)
_NESTED = ("items", "records", "ops")  # where a call carries more scope ids


@dataclass(frozen=True, slots=True)
class ApiKey:
    id: str
    sha256: str  # hex digest of the key
    access: Access
    scopes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def allows(self, scope_field: str, value: str) -> bool:
        return any(_matches(pattern, value) for pattern in self.scopes.get(scope_field, ()))


def _matches(pattern: str, value: str) -> bool:
    if pattern.endswith(ANY):
        return value.startswith(pattern[:-1])
    return value == pattern


def parse_keys(data: Any) -> list[ApiKey]:
    """The keys of a keys file's JSON (``{"keys": [{"id", "sha256", "scopes", "access"}]}``);
    ``ConfigurationError`` naming what is wrong."""
    entries = data.get("keys") if isinstance(data, Mapping) else None
    if not isinstance(entries, list):
        raise ConfigurationError('the API keys file needs {"keys": [...]}')
    keys, seen = [], set()
    for n, entry in enumerate(entries):
        where = f"API keys file, key {n}"
        if not isinstance(entry, Mapping):
            raise ConfigurationError(f"{where}: not an object")
        key_id, digest, access = entry.get("id"), entry.get("sha256"), entry.get("access")
        if not isinstance(key_id, str) or not key_id or key_id in seen:
            raise ConfigurationError(f"{where}: a unique non-empty id is needed")
        if not isinstance(digest, str) or len(digest) != 64 or not _is_hex(digest):
            raise ConfigurationError(f"{where} ({key_id}): sha256 must be 64 hex digits")
        if access not in ("read", "write", "admin"):
            raise ConfigurationError(f"{where} ({key_id}): access is read, write or admin")
        scopes = entry.get("scopes", {})
        if not isinstance(scopes, Mapping) or any(
            f not in SCOPE_FIELDS
            or not isinstance(v, list)
            or not all(isinstance(x, str) for x in v)
            for f, v in scopes.items()
        ):
            raise ConfigurationError(
                f"{where} ({key_id}): scopes maps scope id fields to lists of values"
            )
        seen.add(key_id)
        keys.append(
            ApiKey(
                key_id,
                digest.lower(),
                Access[access.upper()],
                {f: tuple(v) for f, v in scopes.items()},
            )
        )
    return keys


def _is_hex(text: str) -> bool:
    return all(c in "0123456789abcdefABCDEF" for c in text)


def key_digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def find_key(keys: Iterable[ApiKey], presented: str) -> ApiKey | None:
    """The key whose hash is the presented key's, compared in constant time with every key."""
    digest = key_digest(presented)
    found = None
    for key in keys:
        if hmac.compare_digest(key.sha256, digest):
            found = key
    return found


def required_access(method: str, params: Mapping[str, Any]) -> Access:
    if method in ADMIN_METHODS:
        return Access.ADMIN
    if method == "memory.cost.report" and not (params.get("agent_id") or params.get("task_id")):
        return Access.ADMIN  # the whole month, everyone's
    if method == STORE_BATCH:
        return _store_access(_members(params, "ops"))
    return Access.READ if method in READ_METHODS else Access.WRITE


def _store_access(ops: Sequence[Mapping[str, Any]]) -> Access:
    """Admin when an op names no scope id (it reaches every scope's items), else write when
    an op puts, else read."""
    if any(not any(isinstance(op.get(f), str) for f in SCOPE_FIELDS) for op in ops):
        return Access.ADMIN
    return Access.WRITE if any(op.get("op") == "put" for op in ops) else Access.READ


def authorize(key: ApiKey, method: str, params: Any) -> None:
    """Raises ``Forbidden`` unless ``key`` may make this call (module doc)."""
    params = params if isinstance(params, Mapping) else {}
    needed = required_access(method, params)
    if key.access < needed:
        raise Forbidden(
            f"key {key.id} has {key.access.name.lower()} access; {method} needs "
            f"{needed.name.lower()}",
            key_id=key.id,
        )
    if key.access is Access.ADMIN:
        return
    for scope_field, value in scope_ids(params):
        if not key.allows(scope_field, value):
            raise Forbidden(
                f"key {key.id} may not use {scope_field}={value[:100]!r}",
                key_id=key.id,
                field=scope_field,
            )
    if method == "memory.stage.get" and not params.get("task_id"):
        raise Forbidden(f"key {key.id} must name the stage's task_id", key_id=key.id)


def _members(params: Mapping[str, Any], nested: str) -> list[Mapping[str, Any]]:
    found = params.get(nested)
    if isinstance(found, Sequence) and not isinstance(found, str):
        return [m for m in found if isinstance(m, Mapping)]
    return []


def scope_ids(params: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Every (scope id field, value) a call names, nested items and records included."""
    found = [(f, v) for f in SCOPE_FIELDS if isinstance(v := params.get(f), str)]
    for nested in _NESTED:
        for member in _members(params, nested):
            found += [(f, v) for f in SCOPE_FIELDS if isinstance(v := member.get(f), str)]
    return found


class TokenBucket:
    """``rate`` tokens per second up to ``burst``; a call takes one token."""

    def __init__(self, rate: float, burst: int, now: float) -> None:
        self._rate = rate
        self._burst = burst
        self._tokens = float(burst)
        self._at = now

    def take(self, now: float) -> float:
        """0 when a token was taken, else the seconds until one is there."""
        self._tokens = min(self._burst, self._tokens + (now - self._at) * self._rate)
        self._at = now
        if self._tokens >= 1:
            self._tokens -= 1
            return 0.0
        return math.ceil((1 - self._tokens) / self._rate * 1000) / 1000


def token_matches(authorization: str | None, token: str) -> bool:
    """Whether the bearer token of an ``Authorization`` header is ``token`` (constant time):
    the metrics token of the API's and the workers' /metrics."""
    scheme, _, presented = (authorization or "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(presented.strip(), token)
