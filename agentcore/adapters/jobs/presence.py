"""Which Celery workers are alive, and how old the queue's oldest job is, read from Redis.

Every worker process, once it consumes jobs, refreshes its entry in one sorted set
(``agentcore:workers``: member ``host:pid``, score the Redis server's time of its latest beat)
every ``WORKER_BEAT_SECONDS``; an entry older than ``WORKER_TTL_SECONDS`` is a worker gone
(killed, frozen, cut off), and is pruned by the next reader. Redis's clock stamps the beats, so
the workers' and readers' clocks need not agree. This is the worker's heartbeat, not a job's:
a job's own heartbeat (``celery_queue.heartbeat_key``) says whether its worker still runs it.

Every job message carries the time it was published (``ENQUEUED_AT``, a header stamped by
``stamp_enqueued`` with the publisher's clock), so the age of the oldest job still in Celery's
Redis list (its tail: Celery pushes on the left and takes from the right) is read without a
lookup, against Redis's clock: hosts kept in time (NTP) agree to well under the stall threshold.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
from typing import Any

from redis import Redis

from agentcore.services.jobs import QueueFacts

log = logging.getLogger(__name__)

WORKERS_KEY = "agentcore:workers"
WORKER_BEAT_SECONDS = 2.0
WORKER_TTL_SECONDS = 10.0
ENQUEUED_AT = "agentcore_enqueued_at"  # message header: publication time, Unix seconds


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _redis_now(client: Redis) -> float:
    seconds, micros = client.time()
    return float(seconds) + float(micros) / 1e6


class WorkerHeartbeat:
    """A worker process's beat, from a thread, until ``stop`` (which removes its entry)."""

    def __init__(self, client: Redis, name: str | None = None) -> None:
        self._client = client
        self.name = name or worker_name()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="worker-heartbeat", daemon=True)

    def start(self) -> None:
        self.beat()  # alive from the start, not one period later
        self._thread.start()

    def beat(self) -> None:
        self._client.zadd(WORKERS_KEY, {self.name: _redis_now(self._client)})

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        try:
            self._client.zrem(WORKERS_KEY, self.name)
        except Exception:  # Redis away: the entry expires by itself
            log.warning("could not remove the worker's heartbeat", exc_info=True)

    def _run(self) -> None:
        while not self._stop.wait(WORKER_BEAT_SECONDS):
            try:
                self.beat()
            except Exception:  # Redis away for a moment: the next beat tries again
                log.warning("worker heartbeat failed", exc_info=True)


def read_facts(client: Redis, queue: str) -> QueueFacts:
    """Live workers, jobs waiting in ``queue`` and the oldest one's age (blocking calls)."""
    now = _redis_now(client)
    pipe = client.pipeline(transaction=False)
    pipe.zremrangebyscore(WORKERS_KEY, "-inf", now - WORKER_TTL_SECONDS)
    pipe.zcard(WORKERS_KEY)
    pipe.llen(queue)
    pipe.lindex(queue, -1)
    _, alive, queued, oldest = pipe.execute()
    enqueued = _enqueued_at(oldest)
    age = None if enqueued is None else max(0.0, now - enqueued)
    return QueueFacts(workers_alive=int(alive), queued=int(queued), oldest_queued_seconds=age)


def _enqueued_at(message: bytes | None) -> float | None:
    if message is None:
        return None
    try:
        stamp = json.loads(message).get("headers", {}).get(ENQUEUED_AT)
    except (ValueError, AttributeError):
        return None
    return float(stamp) if isinstance(stamp, int | float) else None


def stamp_enqueued(headers: dict[str, Any] | None = None, **_: Any) -> None:
    """``before_task_publish`` receiver: every job message says when it was published (the
    API's submissions and Celery beat's alike)."""
    if headers is not None:
        headers[ENQUEUED_AT] = time.time()
