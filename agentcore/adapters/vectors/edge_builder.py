"""The HNSW build of a qdrant-edge shard, in a process of its own.

``EdgeShard.optimize()`` holds its process's GIL for the whole build (minutes at a million
points), so the process that answers searches never calls it: ``edge_index`` copies the shard
and starts this module on the copy (``python -m agentcore.adapters.vectors.edge_builder``).
It loads the copy with the index's configuration, runs the optimizers (HNSW graphs with int8
scalar quantization beside the float vectors) and exits 0 once the copy is flushed; anything
else is a failed build. It runs at a lower CPU priority than the server, and on Linux it dies
with the process that started it.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time

import qdrant_edge as qe

from agentcore.adapters.child_process import die_with
from agentcore.adapters.vectors.edge_shard import declare_indexes, edge_config

logger = logging.getLogger(__name__)

# The graph: 16 links per point, 100 candidates while building; a filtered search whose
# candidates weigh under 10 MB of vectors scores them exactly instead (the engine's default).
HNSW = qe.HnswIndexConfig(m=16, ef_construct=100, full_scan_threshold=10_000)
# int8 copies of the vectors, kept in memory: the graph is built and searched on them, and
# the float vectors rescore the best candidates (edge_shard's search parameters), read from
# their memory-mapped files (``Memory.Cold``: not read into memory when a shard is loaded).
QUANTIZATION = qe.ScalarQuantizationConfig(qe.ScalarType.Int8, quantile=0.99, always_ram=True)
# Index every segment found (the size of 1 KB): the caller decided a build was due.
OPTIMIZERS = qe.EdgeOptimizersConfig(indexing_threshold=1)
_NICENESS = 10


def build(path: str, dimension: int) -> bool:
    """Build the index of the shard at ``path``; True if any segment was optimized."""
    config = edge_config(
        dimension,
        max_search_threads=None,
        vectors_memory=qe.Memory.Cold,
        hnsw_config=HNSW,
        quantization_config=QUANTIZATION,
        optimizers=OPTIMIZERS,
    )
    shard = qe.EdgeShard.load(path, config)
    try:
        declare_indexes(shard, redeclare=True)
        optimized = shard.optimize()
        shard.flush()
    finally:
        shard.close()
    return optimized


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build the HNSW index of a copied shard.")
    parser.add_argument("path")
    parser.add_argument("--dimension", type=int, required=True)
    parser.add_argument("--parent", type=int, required=True, help="die when this process ends")
    parser.add_argument("--log-level", default="WARNING")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    if not die_with(args.parent):
        return 2
    os.nice(_NICENESS)
    started = time.monotonic()
    optimized = build(args.path, args.dimension)
    logger.info(
        "index built in %s (%s) in %.1f s",
        args.path,
        "optimized" if optimized else "nothing to optimize",
        time.monotonic() - started,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
