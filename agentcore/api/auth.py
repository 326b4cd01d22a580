"""The HTTP edge of API keys: the bearer token of each request, the keys file read again when
it changes, and the rate of each key (``agentcore.domain.access`` holds the rules).

Without ``AGENTCORE_API_KEYS_FILE`` the service is open (and says so at start-up). With it,
``/rpc`` and ``/mcp`` need ``Authorization: Bearer <key>``; ``/health`` needs nothing and
``/metrics`` its own token when ``AGENTCORE_METRICS_TOKEN`` is set. Logs and metrics name a
key by its id, never the key. Either way a request from a web page (an ``Origin`` header) is
refused unless its origin is in ``AGENTCORE_ALLOWED_ORIGINS``.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, Counter

from agentcore.domain.access import ApiKey, TokenBucket, authorize, find_key, parse_keys
from agentcore.domain.errors import ConfigurationError, Forbidden, RateLimited, Unauthorized

log = logging.getLogger(__name__)
RELOAD_CHECK_SECONDS = 1.0


class KeyRing:
    """The keys of one file. It is checked at most once a second and read again when its
    modification time or size changed; a file made invalid keeps the keys read before (and
    logs why). An invalid file at start-up is a ``ConfigurationError``."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._stamp: tuple[int, int] | None = None
        self._checked = 0.0
        self._keys: list[ApiKey] = []
        self._load(strict=True)

    def lookup(self, presented: str) -> ApiKey | None:
        now = time.monotonic()
        if now - self._checked >= RELOAD_CHECK_SECONDS:
            self._checked = now
            self._load(strict=False)
        return find_key(self._keys, presented)

    def _load(self, *, strict: bool) -> None:
        try:
            stat = os.stat(self._path)
            stamp = (stat.st_mtime_ns, stat.st_size)
            if stamp == self._stamp:
                return
            keys = parse_keys(json.loads(self._path.read_text(encoding="utf-8")))
        except (OSError, ValueError, ConfigurationError) as exc:
            message = exc.message if isinstance(exc, ConfigurationError) else str(exc)
            if strict:
                raise ConfigurationError(
                    f"AGENTCORE_API_KEYS_FILE {self._path}: {message}"
                ) from None
            log.error("API keys file %s not reloaded: %s", self._path, message)
            return
        self._keys, self._stamp = keys, stamp
        log.info("API keys file %s: %d keys", self._path, len(keys))


@dataclass(frozen=True, slots=True)
class RateSettings:
    per_second: float = 50.0
    burst: int = 100  # 0: no limit


class Gate:
    """Authenticates a request's bearer key, then checks each call's access, scopes and rate."""

    def __init__(
        self,
        keys: KeyRing | None,
        rate: RateSettings,
        registry: CollectorRegistry,
        origins: Sequence[str] = (),
        refuse: Callable[[], None] = lambda: None,
    ) -> None:
        """``refuse`` raises when the service takes no call now (start-up is not done or
        failed for good: ``services/startup.py``)."""
        self._refuse = refuse
        self._keys = keys
        self._origins = frozenset(origins)
        self._rate = rate
        self._buckets: dict[str, TokenBucket] = {}
        self._calls = Counter(
            "agentcore_api_key_calls_total",
            "Calls by API key id and outcome",
            ["key_id", "outcome"],
            registry=registry,
        )
        self._limited = Counter(
            "agentcore_rate_limited_total",
            "Calls refused by a key's rate limit",
            ["key_id"],
            registry=registry,
        )

    @property
    def open(self) -> bool:
        return self._keys is None

    def allows_origin(self, origin: str) -> bool:
        """Whether web pages of ``origin`` may call (``AGENTCORE_ALLOWED_ORIGINS``)."""
        return origin in self._origins

    def admit(self, authorization: str | None, origin: str | None) -> ApiKey | None:
        """The caller of one HTTP request: ``Forbidden`` for a web page whose ``Origin`` is not
        allowed (a browser sends one with every cross-site request; agents send none), then
        ``authenticate``."""
        if origin is not None and not self.allows_origin(origin):
            raise Forbidden(
                f"requests from web pages ({origin[:100]}) are refused; allow the origin with "
                "AGENTCORE_ALLOWED_ORIGINS"
            )
        return self.authenticate(authorization)

    def authenticate(self, authorization: str | None) -> ApiKey | None:
        """The caller's key (None when the service is open); ``Unauthorized`` otherwise."""
        if self._keys is None:
            return None
        scheme, _, presented = (authorization or "").partition(" ")
        key = self._keys.lookup(presented.strip()) if scheme.lower() == "bearer" else None
        if key is None:
            self._calls.labels("unknown", "unauthorized").inc()
            raise Unauthorized("a valid API key is needed: Authorization: Bearer <key>")
        return key

    def check(self, key: ApiKey | None, method: str, params: Any) -> None:
        """Raises ``Forbidden`` or ``RateLimited`` for one call of ``key`` (or what ``refuse``
        raises, for every call)."""
        self._refuse()
        if key is None:
            return
        try:
            authorize(key, method, params)
        except Forbidden:
            self._calls.labels(key.id, "forbidden").inc()
            log.info("key %s refused %s", key.id, method)
            raise
        if self._rate.burst > 0:
            now = time.monotonic()
            bucket = self._buckets.setdefault(
                key.id, TokenBucket(self._rate.per_second, self._rate.burst, now)
            )
            wait = bucket.take(now)
            if wait > 0:
                self._limited.labels(key.id).inc()
                raise RateLimited(
                    f"key {key.id} is over its rate limit; retry in {wait:.3f} s",
                    retry_after=wait,
                )
        self._calls.labels(key.id, "allowed").inc()


def refusal(exc: Unauthorized | Forbidden) -> tuple[int, dict[str, str]]:
    """The HTTP status and headers of a request refused before any call ran."""
    if isinstance(exc, Unauthorized):
        return 401, {"www-authenticate": "Bearer"}
    return 403, {}
