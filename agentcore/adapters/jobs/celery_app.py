"""The Celery app of both sides: the serving process publishes jobs with it, ``agentcore
worker`` processes run them (agentcore/worker.py registers the task)."""

from __future__ import annotations

from typing import Any

from celery import Celery
from celery.signals import before_task_publish

from agentcore.adapters.jobs.celery_queue import RUN_JOB
from agentcore.adapters.jobs.presence import stamp_enqueued
from agentcore.config import Settings
from agentcore.services.lifecycle.consolidation import CONSOLIDATE
from agentcore.services.lifecycle.expiry import SWEEP_EXPIRED

# Publishing a job, or reaching the result backend, is retried once: the defaults (3 and 20
# retries about a second apart) held a call ~20 s before it could fail.
_ONE_RETRY = {"max_retries": 1, "interval_start": 0, "interval_step": 0.2, "interval_max": 0.5}


def celery_app(settings: Settings) -> Celery:
    """The app, configured from the settings, with the periodic jobs beat submits."""
    app = Celery("agentcore", broker=settings.redis_url, backend=settings.redis_url)
    timeout = settings.store_timeout_seconds
    app.conf.update(
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        task_track_started=True,
        worker_prefetch_multiplier=1,
        broker_connection_retry_on_startup=True,
        result_expires=24 * 3600,
        # A broker or result backend that does not answer fails the call (a retryable
        # PROVIDER_ERROR) within about STORE_TIMEOUT_SECONDS instead of holding it.
        broker_connection_timeout=timeout,
        broker_transport_options={"socket_timeout": timeout, "socket_connect_timeout": timeout},
        redis_socket_timeout=timeout,
        redis_socket_connect_timeout=timeout,
        task_publish_retry_policy=_ONE_RETRY,
        result_backend_transport_options={"retry_policy": _ONE_RETRY},
        beat_schedule=_schedule(settings),
        # JSON lines: the root logger keeps the handler configure_logging gave it.
        worker_hijack_root_logger=settings.log_format == "text",
    )
    # Every job message says when it was published: /health reads the oldest one's age.
    before_task_publish.connect(stamp_enqueued, sender=RUN_JOB, weak=False, dispatch_uid=RUN_JOB)
    return app


def _schedule(settings: Settings) -> dict[str, dict[str, Any]]:
    """The periodic jobs Celery beat submits (``agentcore worker --beat``)."""
    periodic = {"sweep-expired-memories": (settings.expiry_sweep_seconds, SWEEP_EXPIRED)}
    if settings.consolidation_interval_seconds > 0:
        periodic["consolidate-episodes"] = (settings.consolidation_interval_seconds, CONSOLIDATE)
    return {
        name: {"task": RUN_JOB, "schedule": seconds, "args": [kind, {}]}
        for name, (seconds, kind) in periodic.items()
    }
