"""The qdrant-edge shard itself, driven synchronously: what ``EdgeVectorStore`` runs on a
thread of its own or in a process of its own (``edge_process``).

The engine's calls hold the GIL while they work (a search of 100,000 points, ~14 ms, let
another Python thread make under a third of its progress), so run here, in the serving
process, every search of a large scope stops the event loop and every other Python thread
for its whole length. This module imports nothing from the server but the payload helpers,
so a process that serves the shard starts in about half a second.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path
from typing import Any
from uuid import UUID

import numpy as np
import numpy.typing as npt
import qdrant_edge as qe

from agentcore.adapters.vectors.payload import (
    BOOL_FIELDS,
    FLOAT_FIELDS,
    KEYWORD_FIELDS,
    dimension_mismatch,
    point_payload,
    vector_list,
)
from agentcore.domain.errors import ConfigurationError
from agentcore.services.ports import VectorFilter, VectorPoint

logger = logging.getLogger(__name__)

_META_FILE = "collection.json"
_SHARD_DIR = "shard"
_INDEXES: dict[str, qe.PayloadSchemaType] = {
    **dict.fromkeys(KEYWORD_FIELDS, qe.PayloadSchemaType.Keyword),
    **dict.fromkeys(FLOAT_FIELDS, qe.PayloadSchemaType.Float),
    **dict.fromkeys(BOOL_FIELDS, qe.PayloadSchemaType.Bool),
}


def edge_filter(flt: VectorFilter) -> qe.Filter:
    """``VectorFilter`` as a qdrant-edge filter (all conditions must hold)."""
    must: list[qe.ConditionType] = [
        qe.FieldCondition("scope_key", match=qe.MatchAny(list(flt.scope_keys)))
    ]
    if flt.layers:
        must.append(qe.FieldCondition("layer", match=qe.MatchAny(list(flt.layers))))
    if flt.stage_id is not None:
        must.append(qe.FieldCondition("stage_id", match=qe.MatchValue(flt.stage_id)))
    if flt.tags_any:
        must.append(qe.FieldCondition("tags", match=qe.MatchAny(list(flt.tags_any))))
    for tag in flt.tags_all or ():  # one condition per tag: all must hold
        must.append(qe.FieldCondition("tags", match=qe.MatchAny([tag])))
    for key, value in (flt.metadata or {}).items():
        must.append(qe.FieldCondition(f"metadata.{key}", match=_match_value(value)))
    if flt.alive_at is not None:
        must.append(qe.FieldCondition("expires_at", range=qe.RangeFloat(gt=flt.alive_at)))
    if flt.ids is not None:
        must.append(qe.HasIdCondition(set(flt.ids)))
    return qe.Filter(must=must)


def _match_value(value: str | int | bool) -> qe.MatchValue:
    if isinstance(value, bool):
        # The binding turns a Python bool into the integer 1/0 (bool subclasses int), which
        # never matches a boolean payload; numpy.bool_ reaches the engine as a real bool.
        return qe.MatchValue(np.bool_(value))  # type: ignore[arg-type]  # stub omits np.bool_
    return qe.MatchValue(value)


class ShardStore:
    """One shard in ``data_dir``: ``shard/`` (the engine's files) and ``collection.json`` (the
    dimension and embedder it was built for). Nothing is opened until ``open``. Not safe for
    concurrent calls: one caller at a time."""

    def __init__(self, data_dir: str | Path, max_search_threads: int | None = None) -> None:
        self._dir = Path(data_dir)
        self._max_search_threads = max_search_threads
        self._shard: qe.EdgeShard | None = None
        self._dimension = 0

    def open(self, dimension: int, embedder_name: str) -> None:
        meta = self._read_meta()
        stored = self._dimension or int(meta.get("dimension", 0))
        stored_embedder = meta.get("embedder")
        if stored and stored != dimension:
            where = f"the vector store at {self._dir}"
            raise dimension_mismatch(where, stored, stored_embedder, dimension, embedder_name)
        if stored_embedder and stored_embedder != embedder_name:
            logger.warning(
                "vector store at %s was built with embedder %s, now opened with %s",
                self._dir,
                stored_embedder,
                embedder_name,
            )
        if self._shard is None:
            self._shard = self._load_or_create(dimension, embedder_name)
            self._dimension = dimension
        if not meta:
            self._write_meta({"dimension": dimension, "embedder": embedder_name})
        self._create_indexes(self._shard)

    def reset(self, dimension: int, embedder_name: str) -> None:
        self.close()
        shutil.rmtree(self._dir / _SHARD_DIR, ignore_errors=True)
        (self._dir / _META_FILE).unlink(missing_ok=True)
        self._dimension = 0
        self.open(dimension, embedder_name)

    def upsert(self, points: list[VectorPoint]) -> None:
        shard = self._require()
        edge_points = [
            qe.Point(p.id, vector_list(p.vector, self._dimension), point_payload(p)) for p in points
        ]
        shard.update(qe.UpdateOperation.upsert_points(edge_points))

    def delete(self, ids: list[str]) -> None:
        points: list[int | UUID | str] = list(ids)
        self._require().update(qe.UpdateOperation.delete_points(points))

    def search(
        self,
        vector: npt.NDArray[np.float32],
        flt: VectorFilter,
        limit: int,
        score_threshold: float | None,
    ) -> list[tuple[str, float]]:
        request = qe.QueryRequest(
            limit=limit,
            query=qe.Query.Nearest(vector_list(vector, self._dimension)),
            filter=edge_filter(flt),
            score_threshold=score_threshold,
            with_payload=False,
            with_vector=False,
        )
        return [(str(hit.id), hit.score) for hit in self._require().query(request)]

    def count(self, flt: VectorFilter) -> int:
        return self._require().count(qe.CountRequest(exact=True, filter=edge_filter(flt)))

    def flush(self) -> None:
        self._require().flush()

    def close(self) -> None:
        shard, self._shard = self._shard, None
        if shard is not None:
            shard.flush()
            shard.close()

    def _require(self) -> qe.EdgeShard:
        if self._shard is None:
            raise ConfigurationError("the vector store is not open: call ensure_collection first")
        return self._shard

    def _load_or_create(self, dimension: int, embedder_name: str) -> qe.EdgeShard:
        path = self._dir / _SHARD_DIR
        config = qe.EdgeConfig(
            vectors=qe.EdgeVectorParams(size=dimension, distance=qe.Distance.Cosine),
            max_search_threads=self._max_search_threads,
        )
        if not (path / "edge_config.json").exists():
            path.mkdir(parents=True, exist_ok=True)
            return qe.EdgeShard.create(str(path), config)
        try:
            return qe.EdgeShard.load(str(path), config)
        except Exception as exc:
            if "incompatible" not in str(exc).lower():
                raise
            config_file = json.loads((path / "edge_config.json").read_text(encoding="utf-8"))
            found = int(config_file.get("vectors", {}).get("", {}).get("size", 0))
            raise dimension_mismatch(
                f"the vector store at {self._dir}", found, None, dimension, embedder_name
            ) from exc

    @staticmethod
    def _create_indexes(shard: qe.EdgeShard) -> None:
        existing = shard.info().payload_schema
        for field, schema in _INDEXES.items():
            if field not in existing:
                shard.update(qe.UpdateOperation.create_field_index(field, schema))

    def _read_meta(self) -> dict[str, Any]:
        try:
            text = (self._dir / _META_FILE).read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        meta: dict[str, Any] = json.loads(text)
        return meta

    def _write_meta(self, meta: dict[str, Any]) -> None:
        self._dir.mkdir(parents=True, exist_ok=True)
        tmp = self._dir / f"{_META_FILE}.tmp"
        with tmp.open("w", encoding="utf-8") as out:
            json.dump(meta, out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, self._dir / _META_FILE)
