"""The qdrant-edge shard itself, driven synchronously: what ``EdgeVectorStore`` runs on a
thread of its own or in a process of its own (``edge_process``).

The engine's calls hold the GIL while they work (a search of 100,000 points, ~14 ms, let
another Python thread make under a third of its progress), so run here, in the serving
process, every search of a large scope stops the event loop and every other Python thread
for its whole length. This module imports nothing from the server but the payload helpers,
so a process that serves the shard starts in about half a second.

Searches of plain segments score every point their filter keeps; past ``index_threshold``
points outside an indexed segment, ``edge_index`` builds HNSW segments on a copy in another
process and this store switches to the copy (``maintain``). ``collection.json`` names the
directory in use (``shard/`` until the first build).
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

from agentcore.adapters.vectors.edge_conditions import EDGE_CONDITIONS
from agentcore.adapters.vectors.edge_index import DEFAULT_THRESHOLD, SHARD_NAME, IndexBuilds
from agentcore.adapters.vectors.payload import (
    BOOL_FIELDS,
    FLOAT_FIELDS,
    KEYWORD_FIELDS,
    dimension_mismatch,
    point_payload,
    vector_list,
)
from agentcore.adapters.vectors.payload_filter import payload_filter
from agentcore.domain.errors import ConfigurationError
from agentcore.services.ports import VectorFilter, VectorPoint

logger = logging.getLogger(__name__)

_META_FILE = "collection.json"
_SHARD_DIR = "shard"
# Payload indexes. HNSW segments also get links per value (the engine's filterable HNSW) for
# the fields a search narrows a large scope by; the scope ids repeat scope_key, and layers,
# expiry and the critical flag keep most of a scope.
_SUBGRAPHS = frozenset({"scope_key", "tags"})
_INDEXES: dict[str, qe.KeywordIndexParams | qe.FloatIndexParams | qe.BoolIndexParams] = {
    **{f: qe.KeywordIndexParams(enable_hnsw=f in _SUBGRAPHS) for f in KEYWORD_FIELDS},
    **{f: qe.FloatIndexParams(enable_hnsw=f in _SUBGRAPHS) for f in FLOAT_FIELDS},
    **{f: qe.BoolIndexParams(enable_hnsw=f in _SUBGRAPHS) for f in BOOL_FIELDS},
}
# In HNSW segments: 256 candidates (recall@10 0.99 against exact search with a tag filter at
# 100,000 points: docs/benchmarks.md), int8 scores rescored by float over twice the limit.
SEARCH_PARAMS = qe.SearchParams(
    hnsw_ef=256, quantization=qe.QuantizationSearchParams(rescore=True, oversampling=2.0)
)


def edge_config(
    dimension: int,
    max_search_threads: int | None,
    vectors_memory: qe.Memory | None = None,
    **tunables: Any,
) -> qe.EdgeConfig:
    """The shard's configuration; ``vectors_memory`` and ``tunables`` (HNSW, quantization,
    optimizers) are kept as stored when left out."""
    vectors = qe.EdgeVectorParams(
        size=dimension, distance=qe.Distance.Cosine, memory=vectors_memory
    )
    return qe.EdgeConfig(vectors=vectors, max_search_threads=max_search_threads, **tunables)


def declare_indexes(shard: qe.EdgeShard, *, redeclare: bool = False) -> None:
    """Create the payload indexes missing; with ``redeclare``, also those declared otherwise
    (the HNSW links per value), so that a build gives an older shard today's indexes."""
    existing = shard.info().payload_schema
    for name, params in _INDEXES.items():
        found = existing.get(name)
        if found is None or (redeclare and _links(found) != params.enable_hnsw):
            shard.update(qe.UpdateOperation.create_field_index(name, params))


def _links(index: qe.PayloadIndexInfo) -> bool:
    enabled = getattr(index.params, "enable_hnsw", None)
    return enabled is None or bool(enabled)  # the engine's default: links per value


def edge_filter(flt: VectorFilter) -> qe.Filter:
    """``VectorFilter`` as a qdrant-edge filter (all conditions must hold; of ``where``, what
    the payload can say: ``payload_filter``)."""
    must: list[qe.ConditionType] = [
        qe.FieldCondition("scope_key", match=qe.MatchAny(list(flt.scope_keys)))
    ]
    if flt.layers:
        must.append(qe.FieldCondition("layer", match=qe.MatchAny(list(flt.layers))))
    if flt.where is not None:
        where = payload_filter(flt.where, EDGE_CONDITIONS)
        if where is not None:
            must.append(where)
    if flt.alive_at is not None:
        must.append(qe.FieldCondition("expires_at", range=qe.RangeFloat(gt=flt.alive_at)))
    if flt.ids is not None:
        must.append(qe.HasIdCondition(set(flt.ids)))
    return qe.Filter(must=must)


class ShardStore:
    """One shard in ``data_dir``: its directory (``shard/`` or, once indexed, ``shard-<n>/``)
    and ``collection.json`` (the dimension and embedder it was built for, and the directory in
    use). Nothing is opened until ``open``. Not safe for concurrent calls: one caller at a
    time, who also calls ``maintain`` when it is due."""

    def __init__(
        self,
        data_dir: str | Path,
        max_search_threads: int | None = None,
        index_threshold: int = DEFAULT_THRESHOLD,
    ) -> None:
        self._dir = Path(data_dir)
        self._max_search_threads = max_search_threads
        self._shard: qe.EdgeShard | None = None
        self._dimension = 0
        self._active = _SHARD_DIR
        self._builds = IndexBuilds(
            self._dir, index_threshold, self._load, self._write, self._switch
        )

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
            self._active = _shard_name(meta.get("shard", _SHARD_DIR), self._dir)
            self._shard = self._load_or_create(dimension, embedder_name)
            self._dimension = dimension
            self._builds.remove_leftovers(self._active)
        if not meta:
            self._write_meta({"dimension": dimension, "embedder": embedder_name})
        self._builds.before_write()
        declare_indexes(self._shard)

    def reset(self, dimension: int, embedder_name: str) -> None:
        self.close()
        shutil.rmtree(self._dir / self._active, ignore_errors=True)
        (self._dir / _META_FILE).unlink(missing_ok=True)
        self._active = _SHARD_DIR
        shutil.rmtree(self._dir / self._active, ignore_errors=True)
        self._builds.remove_leftovers(self._active)
        self._dimension = 0
        self.open(dimension, embedder_name)

    def upsert(self, points: list[VectorPoint]) -> None:
        shard = self._require()
        self._builds.before_write()
        self._write(shard, "upsert", points)
        self._builds.record("upsert", points)

    def delete(self, ids: list[str]) -> None:
        shard = self._require()
        self._builds.before_write()
        self._write(shard, "delete", ids)
        self._builds.record("delete", ids)

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
            params=SEARCH_PARAMS,
            score_threshold=score_threshold,
            with_payload=False,
            with_vector=False,
        )
        return [(str(hit.id), hit.score) for hit in self._require().query(request)]

    def count(self, flt: VectorFilter) -> int:
        return self._require().count(qe.CountRequest(exact=True, filter=edge_filter(flt)))

    def vectors(self, ids: list[str]) -> dict[str, list[float]]:
        """The stored (dense, unnamed) vector of each of ``ids`` the shard holds."""
        points = self._require().retrieve(list[Any](ids), False, True)
        found: dict[str, list[float]] = {}
        for point in points:
            vector: Any = point.vector
            if isinstance(vector, dict):  # named vectors: the unnamed one
                vector = vector.get("")
            if isinstance(vector, list) and vector and isinstance(vector[0], float):
                found[str(point.id)] = vector
        return found

    def flush(self) -> None:
        shard = self._require()
        self._builds.before_write()
        shard.flush()

    def maintain(self) -> float:
        """One step of the index build, if one is due or under way; returns the seconds until
        the next step is due."""
        if self._shard is None:
            return 1.0
        return self._builds.step(self._shard, self._active, self._dimension)

    def index_status(self) -> dict[str, Any]:
        """The index build's state (idle, copying, building, catching up) and counts."""
        status = self._builds.status()
        info = self._require().info()
        status.update(
            directory=self._active,
            points=info.points_count,
            unindexed=max(0, info.points_count - info.indexed_vectors_count),
            process=os.getpid(),
        )
        return status

    def close(self) -> None:
        self._builds.abort()
        shard, self._shard = self._shard, None
        if shard is not None:
            shard.flush()
            shard.close()

    def _require(self) -> qe.EdgeShard:
        if self._shard is None:
            raise ConfigurationError("the vector store is not open: call ensure_collection first")
        return self._shard

    def _write(self, shard: qe.EdgeShard, op: str, arg: Any) -> None:
        """Apply one write (``upsert`` of points, ``delete`` of ids) to ``shard``."""
        if op == "upsert":
            dimension = self._dimension
            edge_points = [
                qe.Point(p.id, vector_list(p.vector, dimension), point_payload(p)) for p in arg
            ]
            shard.update(qe.UpdateOperation.upsert_points(edge_points))
        else:
            ids: list[int | UUID | str] = list(arg)
            shard.update(qe.UpdateOperation.delete_points(ids))

    def _switch(self, built: qe.EdgeShard, name: str) -> None:
        """Serve from ``built`` (holding every write) from now on. The meta file names it
        first, so that a crash leaves one complete shard named there; raises only before."""
        built.flush()
        self._write_meta({**self._read_meta(), "shard": name})  # the commit
        old, old_name = self._shard, self._active
        self._shard, self._active = built, name
        try:
            _sync_directory(self._dir)
            if old is not None:
                old.close()
        except Exception:  # switched already: the old directory goes at the next open
            logger.exception("closing the shard replaced in %s failed", self._dir)
            return
        shutil.rmtree(self._dir / old_name, ignore_errors=True)

    def _load(self, path: Path) -> qe.EdgeShard:
        return qe.EdgeShard.load(str(path), edge_config(self._dimension, self._max_search_threads))

    def _load_or_create(self, dimension: int, embedder_name: str) -> qe.EdgeShard:
        path = self._dir / self._active
        config = edge_config(dimension, self._max_search_threads)
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


def _shard_name(name: Any, data_dir: Path) -> str:
    if not isinstance(name, str) or not SHARD_NAME.fullmatch(name):
        raise ConfigurationError(f"{data_dir / _META_FILE} names no shard directory: {name!r}")
    return name


def _sync_directory(path: Path) -> None:
    """Make a rename in ``path`` durable (POSIX; elsewhere the rename is what there is)."""
    if os.name != "posix":
        return
    handle = os.open(path, os.O_RDONLY)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)
