"""The lexical index: BM25 over each memory's text, its neighbours in the same session, and its
metadata; SQLite FTS5 (embedded) or PostgreSQL full-text search (production).

Each memory has one document with four weighted fields: ``body`` (its content, weight 1),
``ctx_before`` and ``ctx_after`` (the content of the previous and next memory of the same scope,
layer and session, weight 0.35 each: a reply is found by the question it answers) and ``meta``
(its key, tags and string metadata values such as a speaker or a date, weight 0.5). Documents
are written by ``LexicalWriter`` inside the memory's own transaction, so the index is never
behind the memories table; ``search.SqlLexicalIndex`` searches it, restricted to the
caller's scope keys and filters, and joins the memories table, so a deleted or expired memory
never comes back.

The score is BM25 (k1 = 1.2, b = 0.75) with the field weights applied to term frequencies
(BM25F). FTS5 computes it itself (document frequencies over the whole table); on Postgres the
query computes it from the tsvector positions, with frequencies over the caller's scopes.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import (
    Integer,
    String,
    Table,
    bindparam,
    column,
    insert,
    literal,
    select,
    table,
    text,
    tuple_,
)
from sqlalchemy.dialects import postgresql
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.elements import BindParameter
from sqlalchemy.types import Text

from agentcore.adapters.db.tables import MemoryRow
from agentcore.adapters.db.types import UTCDateTime
from agentcore.domain.models import Memory

FTS_TABLE = "memory_lexical"  # SQLite: the FTS5 table; Postgres: the plain table
FTS_DOCS = "memory_lexical_docs"  # SQLite only: memory id -> FTS5 rowid
FTS_TERMS = "memory_lexical_terms"  # Postgres only: postings, kept by a trigger
FTS_TOKENIZER = "porter unicode61 remove_diacritics 2"
PG_CONFIG = "english"
# Field weights, in FTS5 column order after ``scope`` (which has weight 0).
BODY, NEIGHBOUR, META = 1.0, 0.35, 0.5
MAX_QUERY_TERMS = 32
_NEIGHBOUR_CHARS = 2_000  # context taken from each neighbour
_META_CHARS = 2_000
CHANGES = "memory_lexical_changes"  # SQLite only: ids of changed documents, in commit order
CHANGES_KEPT = 100_000  # the log keeps about this many of the latest changes

_MEMORIES = cast(Table, MemoryRow.__table__)
# Where each document sits (scope, session, layer, time): neighbours are found through these
# columns and their index, never by scanning the memories of a scope.
_PLACE_COLUMNS = ("memory_id", "scope_key", "layer", "session_id")
_PLACES = table(
    FTS_DOCS,
    column("doc_id", Integer()),
    *(column(name, String()) for name in _PLACE_COLUMNS),
    column("created_at", UTCDateTime()),
)
_PLACES_PG = table(
    FTS_TABLE,
    *(column(name, String()) for name in _PLACE_COLUMNS),
    column("created_at", UTCDateTime()),
    *(column(name, Text()) for name in ("body", "ctx_before", "ctx_after", "meta")),
)
WORD = re.compile(r"[^\W_]+")  # a word, as FTS5's unicode61 tokenizer reads one
# PostgreSQL's english stop words (the Snowball list), so both backends ignore the same words.
_STOP_WORDS_TEXT = """i me my myself we our ours ourselves you your yours yourself yourselves
he him his himself she her hers herself it its itself they them their theirs themselves
what which who
whom this that these those am is are was were be been being have has had having do does did
doing a an the and but if or because as until while of at by for with about against between
into through during before after above below to from up down in out on off over under again
further then once here there when where why how all any both each few more most other some
such no nor not only own same so than too very s t can will just don should now"""
STOP_WORDS = frozenset(_STOP_WORDS_TEXT.split())


def query_terms(query: str) -> list[str]:
    """The distinct words of ``query`` that are searched: lower case, stop words dropped."""
    words = [w for w in WORD.findall(query.lower()) if w not in STOP_WORDS]
    return list(dict.fromkeys(words))[:MAX_QUERY_TERMS]


def meta_text(key: str | None, tags: Sequence[str], metadata: Mapping[str, Any]) -> str:
    """The searchable text of a memory besides its content: key, tags, string metadata."""
    parts = [key or "", *tags, *(v for v in metadata.values() if isinstance(v, str))]
    return " ".join(p for p in parts if p)[:_META_CHARS]


def scope_token(scope_key: str) -> str:
    """One FTS5 token per scope key (digits after a letter: no tokenizer or stemmer splits it),
    so a MATCH is restricted to the caller's scopes inside the index."""
    digest = hashlib.blake2b(scope_key.encode(), digest_size=8).digest()
    return f"k{int.from_bytes(digest, 'big')}"


class LexicalWriter:
    """Keeps the lexical documents in step with memory writes, in the caller's transaction."""

    def __init__(self, session: AsyncSession, dialect: str) -> None:
        self._session = session
        self._pg = dialect == "postgresql"

    async def index(self, memory: Memory, *, new: bool = False) -> None:
        """(Re)write ``memory``'s document, and the context of its neighbours to include it.

        Call after the memory row is inserted (``new``: it has no document yet) or updated."""
        prev, nxt = await self._neighbours(_place_of(memory), ())
        if not new and not self._pg:  # Postgres replaces a document in place
            await self._delete([memory.id])
        await self._put_many([(memory, _content(prev), _content(nxt))])
        if prev is not None:
            await self._set(prev[0], "ctx_after", neighbour_text(memory.content))
        if nxt is not None:
            await self._set(nxt[0], "ctx_before", neighbour_text(memory.content))
        changed = [memory.id, *(found[0] for found in (prev, nxt) if found is not None)]
        await self._log(dict.fromkeys(changed, memory.scope_key))

    async def index_new(self, memories: Sequence[Memory]) -> None:
        """The documents of new memories (their rows inserted already) in a few statements:
        each session's new memories are chained to each other and to the documents just
        before and after them (one lookup each way per session). A session whose existing
        documents fall between its new ones (an import of older memories) is indexed one
        memory at a time."""
        chains: dict[tuple[str, str, str], list[Memory]] = {}
        loose: list[Memory] = []
        for memory in memories:
            session = memory.scope.session_id
            if session is None:
                loose.append(memory)
            else:
                chains.setdefault((memory.scope_key, session, memory.layer.value), []).append(
                    memory
                )
        docs = [(memory, "", "") for memory in loose]
        changed = {memory.id: memory.scope_key for memory in memories}
        for chain in chains.values():
            chain.sort(key=lambda m: (m.created_at, m.id))
            first, last = chain[0], chain[-1]
            prev, after_first = await self._neighbours(_place_of(first), ())
            nxt = after_first if len(chain) == 1 else (await self._after(_place_of(last)))
            if after_first != nxt:  # older documents in between
                for memory in chain:
                    await self.index(memory, new=True)
                continue
            texts = [_content(prev), *(neighbour_text(m.content) for m in chain), _content(nxt)]
            docs.extend((m, texts[i], texts[i + 2]) for i, m in enumerate(chain))
            if prev is not None:
                await self._set(prev[0], "ctx_after", neighbour_text(first.content))
                changed[prev[0]] = first.scope_key
            if nxt is not None:
                await self._set(nxt[0], "ctx_before", neighbour_text(last.content))
                changed[nxt[0]] = last.scope_key
        await self._put_many(docs)
        await self._log(changed)

    async def remove(self, memory_ids: Sequence[str]) -> None:
        """Drop the documents of ``memory_ids`` and link their neighbours to each other.

        Call before the memory rows are deleted (their neighbours are found through them)."""
        gone = list(dict.fromkeys(memory_ids))
        if not gone:
            return
        m = _MEMORIES.c
        stmt = select(m.id, m.scope_key, m.layer, m.session_id, m.created_at).where(m.id.in_(gone))
        updates: dict[tuple[str, str], str] = {}
        changed: dict[str, str] = {}  # memory id -> scope key
        for row in (await self._session.execute(stmt)).all():
            place = _Place(row[0], row[1], row[2], row[3], row[4])
            prev, nxt = await self._neighbours(place, gone)
            if prev is not None:
                updates[(prev[0], "ctx_after")] = _content(nxt)
            if nxt is not None:
                updates[(nxt[0], "ctx_before")] = _content(prev)
            for memory_id in (place.id, *(f[0] for f in (prev, nxt) if f is not None)):
                changed[memory_id] = place.scope_key
        await self._delete(gone)
        for (memory_id, field), value in updates.items():
            await self._set(memory_id, field, value)
        await self._log(changed)

    async def _log(self, changed: Mapping[str, str]) -> None:
        """SQLite: note the changed documents (memory id -> scope key) in ``CHANGES`` for the
        in-memory index (``in_memory``), and now and then forget the oldest changes."""
        if self._pg or not changed:
            return
        values = ", ".join(f"(:id{i}, :key{i})" for i in range(len(changed)))
        params: dict[str, str] = {}
        for i, (memory_id, key) in enumerate(changed.items()):
            params |= {f"id{i}": memory_id, f"key{i}": key}
        insert_changes = (
            f"INSERT INTO {CHANGES} (memory_id, scope_key) VALUES {values} RETURNING seq"
        )
        last = max((await self._session.execute(text(insert_changes), params)).scalars())
        if last // _PRUNE_EVERY != (last - len(changed)) // _PRUNE_EVERY:
            await self._session.execute(_PRUNE_CHANGES, {"before": last - CHANGES_KEPT})

    async def _after(self, place: _Place) -> tuple[str, str] | None:
        """(id, content) of the document just after ``place`` in its session."""
        return (await self._neighbours(place, (), before=False))[1]

    async def _neighbours(
        self, place: _Place, exclude: Sequence[str], *, before: bool = True
    ) -> tuple[tuple[str, str] | None, tuple[str, str] | None]:
        """(id, content) of the documents just before (unless not ``before``) and after
        ``place`` in its session (found through the index's own (scope, session, layer, time)
        index)."""
        if place.session_id is None:
            return None, None
        p = _PLACES_PG.c if self._pg else _PLACES.c
        own = tuple_(p.created_at, p.memory_id)
        at = tuple_(literal(place.created_at, UTCDateTime()), literal(place.id, String()))
        content = p.body if self._pg else _MEMORIES.c.content
        base = select(p.memory_id, content).where(
            p.scope_key == place.scope_key, p.session_id == place.session_id, p.layer == place.layer
        )
        if not self._pg:
            base = base.join(_MEMORIES, _MEMORIES.c.id == p.memory_id)
        if exclude:
            base = base.where(p.memory_id.not_in(list(exclude)))
        found: list[tuple[str, str] | None] = [None]
        stmts = [base.where(own > at).order_by(p.created_at.asc(), p.memory_id.asc()).limit(1)]
        if before:
            earlier = base.where(own < at).order_by(p.created_at.desc(), p.memory_id.desc())
            stmts.insert(0, earlier.limit(1))
            found = []
        for stmt in stmts:
            row = (await self._session.execute(stmt)).first()
            found.append(None if row is None else (str(row[0]), str(row[1])))
        return found[0], found[1]

    async def _put_many(self, docs: Sequence[tuple[Memory, str, str]]) -> None:
        """Write the documents (memory, context before, context after) of memories that have
        none (Postgres: or replace theirs), each table in one statement."""
        if not docs:
            return
        places, fields = [], []
        for memory, before, after in docs:
            places.append(
                {
                    "memory_id": memory.id,
                    "scope_key": memory.scope_key,
                    "layer": memory.layer.value,
                    "session_id": memory.scope.session_id,
                    "created_at": memory.created_at,
                }
            )
            fields.append(
                {
                    "id": memory.id,
                    "scope": scope_token(memory.scope_key),
                    "body": memory.content,
                    "ctx_before": before,
                    "ctx_after": after,
                    "meta": meta_text(memory.key, memory.tags, memory.metadata),
                }
            )
        if self._pg:
            rows = [
                place | {k: v for k, v in doc.items() if k not in ("id", "scope")}
                for place, doc in zip(places, fields, strict=True)
            ]
            await self._session.execute(_PG_PUT, rows)
            return
        await self._session.execute(insert(_PLACES), places)
        await self._session.execute(_FTS_INSERT, fields)

    async def _set(self, memory_id: str, field: str, value: str) -> None:
        if field not in ("ctx_before", "ctx_after"):
            raise ValueError(f"not a context field: {field!r}")
        if self._pg:
            where = "memory_id = :id"
        else:
            where = f"rowid = (SELECT doc_id FROM {FTS_DOCS} WHERE memory_id = :id)"
        await self._session.execute(
            text(f"UPDATE {FTS_TABLE} SET {field} = :value WHERE {where}"),
            {"id": memory_id, "value": value},
        )

    async def _delete(self, memory_ids: Sequence[str]) -> None:
        ids: BindParameter[list[str]] = bindparam("ids", list(memory_ids), expanding=True)
        if self._pg:
            stmt = text(f"DELETE FROM {FTS_TABLE} WHERE memory_id IN :ids").bindparams(ids)
            await self._session.execute(stmt)
            return
        docs = f"SELECT doc_id FROM {FTS_DOCS} WHERE memory_id IN :ids"
        for sql in (
            f"DELETE FROM {FTS_TABLE} WHERE rowid IN ({docs})",
            f"DELETE FROM {FTS_DOCS} WHERE memory_id IN :ids",
        ):
            await self._session.execute(text(sql).bindparams(ids))


_PG_INSERT = postgresql.insert(_PLACES_PG)
_PG_PUT = _PG_INSERT.on_conflict_do_update(
    index_elements=["memory_id"],
    set_={c.name: _PG_INSERT.excluded[c.name] for c in _PLACES_PG.columns if c.name != "memory_id"},
)
_FTS_INSERT = text(
    f"INSERT INTO {FTS_TABLE} (rowid, scope, body, ctx_before, ctx_after, meta) "
    "SELECT doc_id, :scope, :body, :ctx_before, :ctx_after, :meta "
    f"FROM {FTS_DOCS} WHERE memory_id = :id"
)


_PRUNE_CHANGES = text(f"DELETE FROM {CHANGES} WHERE seq <= :before")
_PRUNE_EVERY = 1_000


@dataclass(frozen=True, slots=True)
class _Place:
    """Where a memory sits: its session within a scope and layer, and its time in it."""

    id: str
    scope_key: str
    layer: str
    session_id: str | None
    created_at: datetime


def _place_of(memory: Memory) -> _Place:
    return _Place(
        memory.id, memory.scope_key, memory.layer.value, memory.scope.session_id, memory.created_at
    )


def neighbour_text(content: str) -> str:
    """What a memory lends to the documents of its neighbours."""
    return content[:_NEIGHBOUR_CHARS]


def _content(found: tuple[str, str] | None) -> str:
    return "" if found is None else neighbour_text(found[1])
