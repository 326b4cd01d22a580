"""The stored lexical index of one scope, built in a process of its own.

``python -m agentcore.adapters.db.lexical.builder DATABASE SCOPE_KEY PREFIX`` reads the
scope's documents from the SQLite file (read-only), stems them as the serving process does
(``scope.document_stems``) and writes ``PREFIX-<seq>`` (``postings``), seq
being the last change of the log read before the documents: the changes after it are applied
by the serving process. Reading and stemming a million documents takes minutes of one core,
which would hold the server's GIL; here it runs at a lower CPU priority, and on Linux it dies
with the process that started it. Exit 0 once the directory is complete.
"""

from __future__ import annotations

import argparse
import logging
import os
import sqlite3
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from agentcore.adapters.child_process import die_with
from agentcore.adapters.db.lexical.coverage import FtsStems
from agentcore.adapters.db.lexical.postings import Document, Postings
from agentcore.adapters.db.lexical.scope import LAYERS, document_stems, epoch
from agentcore.adapters.db.lexical.writer import CHANGES, FTS_DOCS, FTS_TABLE
from agentcore.adapters.db.tables import MemoryRow

log = logging.getLogger(__name__)

_NICENESS = 10
SCOPE_DOCUMENTS = (
    "SELECT d.memory_id, d.layer, m.expires_at, f.body, f.ctx_before, f.ctx_after, f.meta "
    f"FROM {FTS_DOCS} AS d JOIN {FTS_TABLE} AS f ON f.rowid = d.doc_id "
    f"JOIN {MemoryRow.__tablename__} AS m ON m.id = d.memory_id WHERE d.scope_key = ?"
)


def build(database: Path, scope_key: str, prefix: Path) -> Path:
    """Build the stored index of ``scope_key`` from ``database``; the directory written."""
    db = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    try:
        seq = int(db.execute(f"SELECT coalesce(max(seq), 0) FROM {CHANGES}").fetchone()[0])
        postings = Postings.build(scope_key, seq, _documents(db, scope_key))
    finally:
        db.close()
    directory = prefix.with_name(f"{prefix.name}-{seq}")
    if not directory.exists():
        postings.write(directory)
    return directory


def _documents(db: sqlite3.Connection, scope_key: str) -> Iterator[Document]:
    stems = FtsStems()
    read: dict[str, tuple[list[str], int]] = {}
    for memory_id, layer, expires_at, *fields in db.execute(SCOPE_DOCUMENTS, (scope_key,)):
        frequencies, length = document_stems(stems, fields, read)
        yield str(memory_id), LAYERS.get(str(layer), -1), epoch(expires_at), frequencies, length


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("database", type=Path)
    parser.add_argument("scope_key")
    parser.add_argument("prefix", type=Path)
    parser.add_argument("--parent", type=int, default=0)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    if args.parent and not die_with(args.parent):
        return 1
    os.nice(_NICENESS)
    started = time.monotonic()
    directory = build(args.database, args.scope_key, args.prefix)
    log.info("lexical index %s built in %.1f s", directory, time.monotonic() - started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
