"""What every vector store adapter writes and indexes, whatever its client library."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from agentcore.domain.errors import ConfigurationError
from agentcore.domain.models import ScopeLevel
from agentcore.services.ports import VectorPoint

SCOPE_ID_FIELDS: tuple[str, ...] = tuple(level.id_field for level in ScopeLevel)
KEYWORD_FIELDS: tuple[str, ...] = ("scope_key", *SCOPE_ID_FIELDS, "layer", "stage_id", "tags")
FLOAT_FIELDS: tuple[str, ...] = ("expires_at",)
BOOL_FIELDS: tuple[str, ...] = ("critical",)


def point_payload(point: VectorPoint) -> dict[str, Any]:
    """The filterable payload of one point (the memory's truth lives in the database)."""
    payload: dict[str, Any] = {
        field: value
        for field, value in point.scope_ids.items()
        if field in SCOPE_ID_FIELDS and value is not None
    }
    payload.update(
        scope_key=point.scope_key,
        layer=point.layer,
        tags=list(point.tags),
        critical=point.critical,
        expires_at=float(point.expires_at),
        created_at=float(point.created_at),
        metadata=dict(point.metadata),
    )
    if point.stage_id is not None:
        payload["stage_id"] = point.stage_id
    return payload


def vector_list(vector: Sequence[float] | npt.NDArray[np.float32], dimension: int) -> list[float]:
    """The vector as plain floats, checked against the collection's dimension."""
    values: list[float] = np.asarray(vector, dtype=np.float32).reshape(-1).tolist()
    if len(values) != dimension:
        raise ConfigurationError(
            f"vector has {len(values)} dimensions but the collection holds {dimension}; "
            "the embedder in use does not match the vector store",
            expected=dimension,
            actual=len(values),
        )
    return values


def dimension_mismatch(
    store: str,
    stored_dimension: int,
    stored_embedder: str | None,
    dimension: int,
    embedder_name: str,
) -> ConfigurationError:
    """The error raised when a store built for one embedder is opened with another."""
    recorded = stored_embedder or "an unrecorded embedder"
    return ConfigurationError(
        f"{store} holds {stored_dimension}-dimensional vectors from {recorded}, but the "
        f"configured embedder {embedder_name} produces {dimension} dimensions. Use a new data "
        "directory or collection for this embedder, or re-embed the memories into one.",
        stored_dimension=stored_dimension,
        stored_embedder=stored_embedder,
        dimension=dimension,
        embedder=embedder_name,
    )
