"""One scope's lexical documents, held in memory, and a query's BM25F weights over some scopes.

A scope is searched through ``LexicalScope``: ``ScopeDocuments`` holds its documents in
memory (postings as dicts, numpy arrays per stem built when searched); ``stored``
keeps a large scope's documents on disk instead. BM25 uses k1 1.2, b 0.75, term frequencies
weighted by field (``FIELD_WEIGHTS``), and document frequencies and lengths over the scopes
searched (``Query.over``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from agentcore.adapters.db.lexical.coverage import (
    FIELD_WEIGHTS,
    K1,
    FtsStems,
    bm25_idf,
    idf,
    length_norm,
)
from agentcore.adapters.db.lexical.writer import STOP_WORDS, WORD
from agentcore.adapters.db.types import sqlite_datetime
from agentcore.domain.models import Layer

LAYERS = {layer.value: code for code, layer in enumerate(Layer)}
Floats = npt.NDArray[np.float64]
Hit = tuple[float, str]  # (BM25, memory id)


class LexicalScope(Protocol):
    """The documents of one scope, however held (``ScopeDocuments``, ``StoredScope``)."""

    def __len__(self) -> int: ...

    @property
    def total_length(self) -> float:
        """The summed length in words of the scope's documents."""
        ...

    def holding(self, stem: str) -> int:
        """How many documents hold ``stem``."""
        ...

    def put(
        self, memory_id: str, layer: str, expires_at: float, stems: dict[str, float], length: int
    ) -> None:
        """Add or replace the document of ``memory_id``."""
        ...

    def drop(self, memory_id: str) -> None: ...

    def score(self, memory_id: str, query: Query) -> tuple[float, float] | None:
        """(BM25, coverage) of ``memory_id``'s document, if the scope holds it."""
        ...

    def best(
        self,
        query: Query,
        limit: int,
        layers: Sequence[str] | None,
        alive_at: float | None,
        ids: Sequence[str] | None,
    ) -> list[Hit]:
        """The best ``limit`` (BM25 > 0, memory id) under the filters, in no order."""
        ...


@dataclass(frozen=True, slots=True)
class Query:
    """A query's stems over some scopes: their weights for BM25 and for coverage."""

    bm25_idf: dict[str, float]
    coverage_idf: dict[str, float]
    average_length: float
    whole: float  # the sum of ``coverage_idf``: a document holding every stem

    @classmethod
    def over(cls, scopes: Sequence[LexicalScope], stems: Iterable[str]) -> Query:
        documents = sum(len(scope) for scope in scopes)
        length = sum(scope.total_length for scope in scopes)
        bm25_weights, coverage_idf = {}, {}
        for stem in stems:
            n = sum(scope.holding(stem) for scope in scopes)
            if n:
                bm25_weights[stem] = bm25_idf(documents, n)
            coverage_idf[stem] = idf(documents, n)
        average = max(length / documents, 1.0) if documents else 1.0
        return cls(bm25_weights, coverage_idf, average, sum(coverage_idf.values()))

    def score(self, stems: dict[str, float], length: float) -> tuple[float, float]:
        """(BM25, coverage) of one document."""
        norm = length_norm(length, self.average_length)
        bm25 = covered = 0.0
        for stem, weight in self.bm25_idf.items():
            tf = stems.get(stem)
            if tf is not None:
                bm25 += weight * tf * (K1 + 1) / (tf + norm)
                covered += self.coverage_idf[stem]
        return bm25, (covered / self.whole if self.whole > 0 else 0.0)


class ScopeDocuments:
    """The lexical documents of one scope in memory: per document its stems' weighted
    frequencies, its length in words, its layer and expiry; per stem the documents holding it."""

    def __init__(self) -> None:
        self.slots: dict[str, int] = {}  # memory id -> slot
        self._ids: list[str | None] = []
        self._forward: list[dict[str, float]] = []
        self._postings: dict[str, dict[int, float]] = {}
        self._arrays: dict[str, tuple[npt.NDArray[np.int64], Floats]] = {}
        self._free: list[int] = []
        self.lengths: Floats = np.zeros(0)
        self.layers = np.zeros(0, dtype=np.int8)
        self.expires: Floats = np.zeros(0)
        self._total_length = 0.0

    def __len__(self) -> int:
        return len(self.slots)

    @property
    def total_length(self) -> float:
        return self._total_length

    def put(
        self, memory_id: str, layer: str, expires_at: float, stems: dict[str, float], length: int
    ) -> None:
        self.drop(memory_id)
        slot = self._free.pop() if self._free else self._grow()
        self.slots[memory_id] = slot
        self._ids[slot] = memory_id
        self._forward[slot] = stems
        self.lengths[slot] = length
        self.layers[slot] = LAYERS.get(layer, -1)
        self.expires[slot] = expires_at
        self._total_length += length
        for stem, tf in stems.items():
            self._postings.setdefault(stem, {})[slot] = tf
            self._arrays.pop(stem, None)

    def drop(self, memory_id: str) -> None:
        slot = self.slots.pop(memory_id, None)
        if slot is None:
            return
        for stem in self._forward[slot]:
            holding = self._postings[stem]
            del holding[slot]
            if not holding:
                del self._postings[stem]
            self._arrays.pop(stem, None)
        self._total_length -= self.lengths[slot]
        self._ids[slot] = None
        self._forward[slot] = {}
        self.lengths[slot] = 0.0
        self._free.append(slot)

    def holding(self, stem: str) -> int:
        return len(self._postings.get(stem, ()))

    def postings(self, stem: str) -> tuple[npt.NDArray[np.int64], Floats]:
        """The slots of the documents holding ``stem`` and its weighted frequency in each."""
        arrays = self._arrays.get(stem)
        if arrays is None:
            holding = self._postings.get(stem, {})
            arrays = (
                np.fromiter(holding.keys(), np.int64, len(holding)),
                np.fromiter(holding.values(), np.float64, len(holding)),
            )
            self._arrays[stem] = arrays
        return arrays

    def frequencies(self, memory_id: str) -> tuple[dict[str, float], float] | None:
        """The stems and length of ``memory_id``'s document, if held."""
        slot = self.slots.get(memory_id)
        return None if slot is None else (self._forward[slot], float(self.lengths[slot]))

    def score(self, memory_id: str, query: Query) -> tuple[float, float] | None:
        document = self.frequencies(memory_id)
        return None if document is None else query.score(*document)

    def memory_id(self, slot: int) -> str:
        memory_id = self._ids[slot]
        if memory_id is None:
            raise KeyError(slot)
        return memory_id

    def best(
        self,
        query: Query,
        limit: int,
        layers: Sequence[str] | None,
        alive_at: float | None,
        ids: Sequence[str] | None,
    ) -> list[Hit]:
        """Every document holding a query stem is scored (numpy over each stem's postings)."""
        size = len(self.lengths)
        scores = np.zeros(size)
        norm = length_norm(self.lengths, query.average_length)
        for stem, weight in query.bm25_idf.items():
            slots, tf = self.postings(stem)
            scores[slots] += weight * tf * (K1 + 1) / (tf + norm[slots])
        keep = scores > 0
        if layers:
            keep &= np.isin(self.layers, layer_codes(layers))
        if alive_at is not None:
            keep &= self.expires > alive_at
        if ids is not None:
            allowed = np.zeros(size, dtype=bool)
            allowed[[self.slots[i] for i in ids if i in self.slots]] = True
            keep &= allowed
        candidates = np.flatnonzero(keep)
        if len(candidates) > limit:
            candidates = candidates[np.argpartition(-scores[candidates], limit - 1)[:limit]]
        return [(float(scores[slot]), self.memory_id(int(slot))) for slot in candidates]

    def _grow(self) -> int:
        slot = len(self._ids)
        if slot == len(self.lengths):
            size = max(64, 2 * slot)
            self.lengths = np.resize(self.lengths, size)
            self.layers = np.resize(self.layers, size)
            self.expires = np.resize(self.expires, size)
        self._ids.append(None)
        self._forward.append({})
        return slot


def layer_codes(layers: Sequence[str]) -> list[int]:
    return [LAYERS.get(layer, -2) for layer in layers]


def document_stems(
    stems: FtsStems,
    fields: Sequence[str | None],
    read: dict[str, tuple[list[str], int]] | None = None,
) -> tuple[dict[str, float], int]:
    """A document's weighted stem frequencies (``fields`` in ``FIELD_WEIGHTS`` order) and its
    length in words (stop words counted, not kept). ``read``: each field text's stems and
    length, kept by the caller (a neighbour's text is also two other documents' context)."""
    frequency: dict[str, float] = {}
    length = 0
    for weight, field in zip(FIELD_WEIGHTS, fields, strict=True):
        if not field:
            continue
        found = None if read is None else read.get(field)
        if found is None:
            words = WORD.findall(field.lower())
            found = (stems([word for word in words if word not in STOP_WORDS]), len(words))
            if read is not None:
                if len(read) >= _READ_KEPT:
                    read.clear()
                read[field] = found
        length += found[1]
        for stem in found[0]:
            frequency[stem] = frequency.get(stem, 0.0) + weight
    return frequency, length


_READ_KEPT = 4_096  # field texts a ``read`` keeps


def epoch(value: str | None) -> float:
    """An expiry as SQLite stores it, in epoch seconds (never: infinity)."""
    return math.inf if value is None else sqlite_datetime(value).timestamp()
