"""The lexical index: BM25F over each memory's document, and the share of a query's terms each
document holds (coverage). Hand-written because the database's own full-text search ranks
every matching document of a search: at 100k memories in one scope SQLite FTS5 answered a
search at p95 130 ms, the postings held here at 24 ms; at 1M, FTS5 at 377 ms, the stored
arrays at 12 ms (docs/benchmarks.md, Scale; docs/decisions.md, the lexical index).

- ``writer``: every memory's document (its text, its neighbouring turns, its metadata),
  written in the memory's own transaction, with the change log the readers follow.
- ``search``: ``SqlLexicalIndex``, what retrieval calls; ``postgres`` is PostgreSQL's side
  (BM25F in SQL over its postings table), ``coverage`` the query-term coverage.
- ``in_memory``, ``scope``: SQLite's scopes held in memory; ``postings``, ``stored``,
  ``maxscore``, ``builder``: a large scope's index as memory-mapped arrays, built by a process
  of its own and searched exactly by MaxScore.

Invariants: the database is the record, and an index is only ever a copy of it; a search sees
every committed write (it applies the change log first), whoever wrote it; the ranking is
BM25F with the same statistics whichever copy answers (held, stored or FTS5), so a scope that
moves between them keeps its order; a stored build is written once and never changed.
"""
