"""The composition root: the only place that reads settings and builds adapters and services.

Called by the Starlette lifespan, the Celery worker, the CLI and the tests (which may pass
their own embedder or vector store). ``wiring`` wires one process in short steps;
``adapters`` says which adapter each setting selects; ``container`` is what they build;
``embedder_check`` keeps a store to one embedder.
"""

from __future__ import annotations

from agentcore.bootstrap.adapters import build_embedder, build_fact_extractor, build_vector_store
from agentcore.bootstrap.container import Container
from agentcore.bootstrap.embedder_check import reembed_store
from agentcore.bootstrap.wiring import REPLAY_VECTORS, build_container, build_worker_container

__all__ = [
    "REPLAY_VECTORS",
    "Container",
    "build_container",
    "build_embedder",
    "build_fact_extractor",
    "build_vector_store",
    "build_worker_container",
    "reembed_store",
]
