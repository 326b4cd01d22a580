"""``agentcore export`` and ``agentcore import``: a scope's memories as JSON Lines, a page or a
batch per call, with a progress bar on stderr."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any, TextIO

from agentcore.cli.output import progress
from agentcore.client import MemoryClient


def export_records(c: MemoryClient, params: dict[str, Any]) -> None:
    """Every page of the scope ``params`` name to stdout as JSON Lines, the count on stderr as
    it goes."""
    done, pages = 0, 0
    try:
        while True:
            page = c.export(**params, limit=500)
            for record in page["records"]:
                print(json.dumps(record, ensure_ascii=False))
            done, pages = done + len(page["records"]), pages + 1
            progress("exported", done, page["total_count"])
            if page["next_cursor"] is None:
                return
            params["cursor"] = page["next_cursor"]
    finally:
        if pages:  # ends the progress line, before an error's if one follows
            print(file=sys.stderr)


def import_records(c: MemoryClient, path: str, scope: dict[str, Any]) -> dict[str, int]:
    """The JSON Lines of ``path`` into ``scope``, 100 records per call (the file is read a
    batch at a time), progress on stderr; how many were imported, skipped and expired."""
    counts = {"imported": 0, "skipped": 0, "expired": 0}
    with open(path, encoding="utf-8") as source:
        total = sum(1 for line in source if line.strip())
        source.seek(0)
        done = 0
        try:
            for batch in _batches(source, 100):
                result = c.import_(batch, **scope)
                for name in counts:
                    counts[name] += len(result[name])
                done += len(batch)
                progress("imported", done, total)
        finally:
            if done:
                print(file=sys.stderr)
    return counts


def _batches(source: TextIO, size: int) -> Iterator[list[Any]]:
    batch: list[Any] = []
    for line in source:
        if line.strip():
            batch.append(json.loads(line))
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch
