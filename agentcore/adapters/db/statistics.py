"""PostgreSQL: fresh statistics for the tables every search plans on.

The planner costs a statement from each table's statistics. Autovacuum refreshes them once a
tenth of a table has changed. A server that runs with autovacuum off, or one that is behind a
bulk load, leaves the planner with the counts from the migration, which analyzed empty tables.
A search at 100,000 memories in one scope then read all of an index that merely ends with
``id`` (the browser's scope-by-time one) for the 120 candidate rows it should have found by
primary key: 300 of its 310 ms. No form of the statement avoided that: with no counts, every
index looks as small as the primary key.

So the serving process does autovacuum's analysis for these tables itself (``analyze_changed``,
run at start and every minute, ``api.runtime``): a table is analyzed when its rows changed since its
last analysis by more than ``CHANGED_SHARE`` of them (autovacuum's default) and at least
``CHANGED_AT_LEAST``. One process at a time does it (an advisory lock); where autovacuum
keeps up, it finds nothing to do.

Where autovacuum is off the table is vacuumed as well (``VACUUM (ANALYZE)``), as autovacuum
would have done for its inserts: that marks its pages all-visible, so an index holding every
column a statement reads answers without the table. The counts of a query's lexemes are such a
read: at 100,000 memories in one scope they took 39-47 ms (p95) unvacuumed, 7-9 ms vacuumed.
"""

from __future__ import annotations

import logging

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from agentcore.adapters.db.lexical.writer import FTS_TABLE, FTS_TERMS

log = logging.getLogger(__name__)

CHANGED_SHARE = 0.1
CHANGED_AT_LEAST = 1_000
TABLES = ("memories", FTS_TABLE, FTS_TERMS)
LOCK = 0x61676E74_73746174  # the advisory lock's key ("agntstat")
_CHANGED = text(
    "SELECT relname FROM pg_stat_user_tables WHERE relname = ANY(:tables) "
    "AND n_mod_since_analyze > greatest(:at_least, :share * n_live_tup)"
)


async def analyze_changed(engine: AsyncEngine) -> list[str]:
    """Analyze (and vacuum, where autovacuum is off) the ``TABLES`` that changed by more than
    their share since they were last analyzed; returns their names. PostgreSQL only."""
    async with engine.connect() as conn:
        conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
        if not await conn.scalar(text("SELECT pg_try_advisory_lock(:key)"), {"key": LOCK}):
            return []  # another process is at it
        try:
            params = {"tables": list(TABLES), "at_least": CHANGED_AT_LEAST, "share": CHANGED_SHARE}
            changed = [str(row[0]) for row in await conn.execute(_CHANGED, params)]
            if changed:
                autovacuum = await conn.scalar(text("SELECT current_setting('autovacuum') = 'on'"))
                command = "ANALYZE" if autovacuum else "VACUUM (ANALYZE)"
                for table in changed:
                    await conn.execute(text(f"{command} {table}"))
                log.info("%s %s (changed since their last analysis)", command, ", ".join(changed))
        finally:
            await conn.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": LOCK})
    return changed
