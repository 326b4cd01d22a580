"""Start-up work that needs a store: the embedder check (database) and the vector collection.

Done before serving when the stores answer. When one is out of reach, the service starts
anyway, not ready (``/readyz`` 503), and a background loop retries the work in order until it
is done. Until a check that guards the data is done (the embedder check: a store built with
another model must not get this one's vectors), every call is refused with a retryable
``PROVIDER_ERROR`` naming the store it waits for; calls need not wait for the others (a memory
is stored while the vector collection waits for Qdrant; its vector waits in the outbox). A
check that fails for good is kept as ``failure``, and every call is refused with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from agentcore.domain.errors import AgentCoreError, ProviderError
from agentcore.services.failures import log_failure

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    store: str  # the store it needs
    run: Callable[[], Awaitable[None]]
    guards_calls: bool = False  # no call is taken until it is done


class StartupChecks:
    def __init__(self, checks: Sequence[Check]) -> None:
        self._pending = list(checks)
        self.failure: AgentCoreError | None = None
        self._waiting: AgentCoreError | None = None  # why the first pending check waits
        # Set once no check that guards the data is pending: calls and background work go on.
        self.admitting = asyncio.Event()
        self._note_admitting()

    @property
    def done(self) -> bool:
        return not self._pending

    @property
    def waiting_for(self) -> list[str]:
        return [check.name for check in self._pending]

    async def run(self) -> bool:
        """Run the pending checks in order, up to the first whose store is out of reach (a
        retryable error: False, retried later). Any other error is raised, and a refusal
        (``AgentCoreError``) is kept as ``failure``. True when all are done."""
        while self._pending:
            check = self._pending[0]
            try:
                await check.run()
            except AgentCoreError as exc:
                if exc.retryable:
                    if self._waiting is None or self._waiting.message != exc.message:
                        log.warning("start-up: %s waits: %s", check.name, exc.message)
                    self._waiting = exc
                    return False
                self.failure = exc
                raise
            self._pending.pop(0)
            self._waiting = None
            self._note_admitting()
            log.info("start-up: %s done", check.name)
        return True

    def _note_admitting(self) -> None:
        if not any(check.guards_calls for check in self._pending):
            self.admitting.set()

    def admit(self) -> None:
        """Raises when no call may be taken now: a check failed for good, or one that guards
        the data is not done yet."""
        if self.failure is not None:
            raise self.failure
        for index, check in enumerate(self._pending):
            if check.guards_calls:
                if index == 0 and self._waiting is not None:
                    waiting = self._waiting
                    raise ProviderError(
                        f"the service is starting: {waiting.message}", **waiting.details
                    )
                raise ProviderError(
                    f"the service is starting: {check.name} waits for a store ({check.store}); "
                    "retry later",
                    store=check.store,
                )

    async def keep_trying(self, seconds: float, stop: asyncio.Event) -> None:
        """Retry every ``seconds`` until every check is done, one fails for good, or ``stop``."""
        while not self.done and not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=seconds)
            try:
                await self.run()
            except AgentCoreError as exc:
                log.error("start-up failed; every call is refused: %s", exc.message)
                return
            except Exception as exc:  # a defect: logged, and tried again
                log_failure(log, "a start-up check failed", exc)
