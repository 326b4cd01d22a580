"""A scope's lexical documents as arrays on disk, read memory-mapped: what a large scope is
searched from (``stored``), built aside from SQLite (``builder``).

One directory per build, written once and never changed (numpy ``.npy`` files, then
``meta.json`` last). With N documents, T stems and P (document, stem) pairs:

- the stems, as 64-bit hashes (``stem_hash``), sorted (T); stem i's postings are
  ``slots[term_starts[i]:term_starts[i + 1]]`` (document slots, ascending) with the stem's
  weighted frequency in each (``tfs``); per stem the most it adds to a document's score per
  unit of idf (``max_impact``, with the build's mean length), which bounds what it can add to a
  score (MaxScore: ``impact_bound``);
- per document (a slot): its stems (``doc_terms``/``doc_tfs`` from ``doc_starts``), its
  length in words, layer code and expiry, and its memory id (``ids``; ``sorted_ids`` and
  ``sorted_slots`` find a slot by id).

Opening maps the files: nothing is read until a search touches it, and the kernel keeps or
drops the pages; nothing is parsed into Python objects, so opening takes milliseconds at any
size.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from array import array
from collections.abc import Iterable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from agentcore.adapters.db.lexical.coverage import K1, length_norm

FORMAT = 2  # 2: per stem its largest impact (1: its largest frequency and shortest document)
META = "meta.json"
Document = tuple[str, int, float, dict[str, float], int]
"""(memory id, layer code, expiry in epoch seconds, weighted stem frequencies, length)."""


def stem_hash(stem: str) -> int:
    """A stem's 64-bit key in the stored dictionary (collisions are refused at build)."""
    return int.from_bytes(hashlib.blake2b(stem.encode(), digest_size=8).digest(), "little")


@dataclass(frozen=True, slots=True)
class Postings:
    """The stored documents of one scope (module docstring)."""

    terms: npt.NDArray[np.uint64]
    term_starts: npt.NDArray[np.int64]
    max_impact: npt.NDArray[np.float32]
    slots: npt.NDArray[np.int32]
    tfs: npt.NDArray[np.float32]
    doc_starts: npt.NDArray[np.int64]
    doc_terms: npt.NDArray[np.int32]
    doc_tfs: npt.NDArray[np.float32]
    lengths: npt.NDArray[np.float32]
    layers: npt.NDArray[np.int8]
    expires: npt.NDArray[np.float64]
    ids: npt.NDArray[np.bytes_]
    sorted_ids: npt.NDArray[np.bytes_]
    sorted_slots: npt.NDArray[np.int32]
    scope_key: str = ""
    seq: int = 0  # the last change of the log (``lexical.CHANGES``) the documents include
    total_length: float = 0.0

    @property
    def documents(self) -> int:
        return len(self.lengths)

    def term(self, stem: str) -> int:
        """The index of ``stem`` in the dictionary, or -1."""
        key = np.uint64(stem_hash(stem))
        i = int(np.searchsorted(self.terms, key))
        return i if i < len(self.terms) and self.terms[i] == key else -1

    def holding(self, term: int) -> int:
        return int(self.term_starts[term + 1] - self.term_starts[term])

    def postings(self, term: int) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.float32]]:
        start, end = int(self.term_starts[term]), int(self.term_starts[term + 1])
        return self.slots[start:end], self.tfs[start:end]

    def document(self, slot: int) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.float32]]:
        """The stems (dictionary indexes) of the document in ``slot`` and their frequencies."""
        start, end = int(self.doc_starts[slot]), int(self.doc_starts[slot + 1])
        return self.doc_terms[start:end], self.doc_tfs[start:end]

    def slot(self, memory_id: str) -> int:
        """The slot of ``memory_id``, or -1."""
        raw = memory_id.encode()
        if len(raw) > self.sorted_ids.dtype.itemsize:
            return -1
        key = np.array(raw, dtype=self.sorted_ids.dtype)
        i = int(np.searchsorted(self.sorted_ids, key))
        found = i < len(self.sorted_ids) and self.sorted_ids[i] == key
        return int(self.sorted_slots[i]) if found else -1

    def memory_id(self, slot: int) -> str:
        return bytes(self.ids[slot]).decode()

    def write(self, directory: Path) -> None:
        """Write to ``directory`` (new): a temporary sibling first, renamed when complete."""
        partial = directory.with_name(f"{directory.name}.partial-{os.getpid()}")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        for name, values in self._arrays().items():
            np.save(partial / f"{name}.npy", values)
        meta = {
            "format": FORMAT,
            "scope_key": self.scope_key,
            "seq": self.seq,
            "documents": self.documents,
            "total_length": self.total_length,
        }
        (partial / META).write_text(json.dumps(meta))
        os.replace(partial, directory)

    @classmethod
    def open(cls, directory: Path) -> Postings:
        """Map a directory ``write`` made; raises ``ValueError`` when it is not one."""
        meta = json.loads((directory / META).read_text())
        if meta.get("format") != FORMAT:
            raise ValueError(f"{directory}: not a lexical index of format {FORMAT}")
        # Plain arrays over the mapped files: numpy's memmap subclass costs microseconds in
        # Python on every slice, and a search slices each query stem's postings.
        arrays: dict[str, Any] = {
            name: np.load(directory / f"{name}.npy", mmap_mode="r").view(np.ndarray)
            for name in _ARRAYS
        }
        scalars = {k: meta[k] for k in ("scope_key", "seq", "total_length")}
        return cls(**arrays, **scalars)

    @classmethod
    def build(cls, scope_key: str, seq: int, documents: Iterable[Document]) -> Postings:
        """The arrays of ``documents`` (each memory id once)."""
        stems: dict[str, int] = {}  # stem -> its number in order of appearance
        doc_terms, doc_tfs, counts = array("i"), array("f"), array("i")
        ids: list[bytes] = []
        lengths, layers, expires = array("f"), array("b"), array("d")
        for memory_id, layer, expires_at, frequencies, length in documents:
            ids.append(memory_id.encode())
            lengths.append(length)
            layers.append(layer)
            expires.append(expires_at)
            counts.append(len(frequencies))
            for stem, tf in frequencies.items():
                doc_terms.append(stems.setdefault(stem, len(stems)))
                doc_tfs.append(tf)
        hashes = np.fromiter((stem_hash(s) for s in stems), np.uint64, len(stems))
        order = np.argsort(hashes)
        if len(hashes) and np.any(np.diff(hashes[order]) == 0):
            raise ValueError("two stems share a hash")  # never seen; refused rather than mixed
        rank = np.empty(len(stems), np.int32)
        rank[order] = np.arange(len(stems), dtype=np.int32)
        terms = rank[np.frombuffer(doc_terms, np.int32)] if doc_terms else np.zeros(0, np.int32)
        tfs = np.frombuffer(doc_tfs, np.float32) if doc_tfs else np.zeros(0, np.float32)
        per_doc = np.frombuffer(counts, np.int32) if counts else np.zeros(0, np.int32)
        lengths_array = np.frombuffer(lengths, np.float32) if lengths else np.zeros(0, np.float32)
        # The inverted lists: pairs sorted by stem, slots ascending within a stem.
        by_term = np.argsort(terms, kind="stable")
        slot_of_pair = np.repeat(np.arange(len(per_doc), dtype=np.int32), per_doc)
        term_starts = np.zeros(len(stems) + 1, np.int64)
        np.cumsum(np.bincount(terms, minlength=len(stems)), out=term_starts[1:])
        slots, posting_tfs = slot_of_pair[by_term], tfs[by_term]
        starts = term_starts[:-1]
        id_array = np.array(ids, dtype=f"S{max((len(i) for i in ids), default=1)}")
        id_order = np.argsort(id_array, kind="stable").astype(np.int32)
        doc_starts = np.zeros(len(per_doc) + 1, np.int64)
        np.cumsum(per_doc, out=doc_starts[1:])
        total_length = float(lengths_array.sum(dtype=np.float64))
        average = max(total_length / len(per_doc), 1.0) if len(per_doc) else 1.0
        return cls(
            terms=hashes[order],
            term_starts=term_starts,
            max_impact=_max_impacts(posting_tfs, lengths_array[slots], starts, average),
            slots=slots,
            tfs=posting_tfs,
            doc_starts=doc_starts,
            doc_terms=terms,
            doc_tfs=tfs,
            lengths=lengths_array,
            layers=np.frombuffer(layers, np.int8) if layers else np.zeros(0, np.int8),
            expires=np.frombuffer(expires, np.float64) if expires else np.zeros(0),
            ids=id_array,
            sorted_ids=id_array[id_order],
            sorted_slots=id_order,
            scope_key=scope_key,
            seq=seq,
            total_length=total_length,
        )

    @property
    def average_length(self) -> float:
        return max(self.total_length / self.documents, 1.0) if self.documents else 1.0

    def impact_bound(self, term: int, average_length: float) -> float:
        """The most ``term`` adds to a score per unit of idf, the documents' lengths weighed
        against ``average_length``: its ``max_impact`` (against the build's mean length)
        times ``average_length`` / that mean when larger. (The length part of BM25's norm
        scales by the ratio of the means; the rest of the norm does not move.)"""
        return float(self.max_impact[term]) * max(1.0, average_length / self.average_length)

    def _arrays(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in _ARRAYS}


def _max_impacts(
    tfs: npt.NDArray[np.float32],
    lengths: npt.NDArray[np.float32],
    starts: npt.NDArray[np.int64],
    average: float,
) -> npt.NDArray[np.float32]:
    """Per stem (its postings from ``starts``, ``lengths`` their documents'), the largest
    tf·(k1+1)/(tf+norm) over them, a hair above (float32)."""
    if not len(starts):
        return tfs[:0]
    tf = tfs.astype(np.float64)
    impacts = tf * (K1 + 1) / (tf + length_norm(lengths.astype(np.float64), average))
    return np.maximum.reduceat(impacts, starts).astype(np.float32) * np.float32(1 + 1e-6)


_ARRAYS = tuple(
    f.name for f in fields(Postings) if f.name not in ("scope_key", "seq", "total_length")
)
