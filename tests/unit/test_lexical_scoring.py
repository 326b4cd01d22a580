"""Pure parts of SQLite lexical scoring: the shortcut of coverage and BM25 (an ASCII word stems,
by FTS5's Porter, to a query stem only if it begins as ``_stem_starts`` expects, so the words
that don't need not be stemmed), FTS5's varints, and the terms that find candidates."""

from __future__ import annotations

from pathlib import Path

from agentcore.adapters.db.lexical.coverage import FtsStems, _stem_starts, varints
from agentcore.adapters.db.lexical.search import FINDING_FLOOR, FINDING_SHARE, _finding_terms
from agentcore.adapters.db.lexical.writer import WORD

ROOT = Path(__file__).resolve().parents[2]
# Endings Porter rewrites, and short words whose kept part changes ("say" -> "sai").
TRICKY = [
    "say",
    "says",
    "happy",
    "happiness",
    "ponies",
    "ties",
    "being",
    "agreed",
    "hoping",
    "relational",
    "conditional",
    "organization",
    "generalization",
    "sensibility",
    "possibly",
    "operator",
    "sensitivity",
    "national",
    "sing",
    "ring",
    "sky",
    "by",
    "as",
    "is",
    "was",
    "feed",
    "needed",
    "agreement",
    "electrical",
    "hopeful",
    "goodness",
    "formality",
    "triplicate",
    "adjustable",
    "defensible",
    "irritant",
    "replacement",
    "adoption",
    "dependent",
    "communism",
    "activate",
    "angularity",
    "homologous",
    "effective",
    "bowdlerize",
    "probate",
    "rate",
    "cease",
    "controll",
    "roll",
    "x",
    "xi",
    "3pm",
    "2023",
    "a1b2",
]


def vocabulary() -> list[str]:
    words = set(TRICKY)
    prose = [ROOT / "README.md", *(ROOT / "docs").glob("*.md"), *(ROOT / "agentcore").rglob("*.py")]
    for path in prose:
        words.update(WORD.findall(path.read_text(encoding="utf-8").lower()))
    return sorted(word for word in words if word.isascii())


def test_every_word_begins_as_its_stem_predicts() -> None:
    words = vocabulary()
    assert len(words) > 2_000  # the project's own prose and code
    stems = FtsStems()(words)
    wrong = [
        (w, s) for w, s in zip(words, stems, strict=True) if not _stem_starts([s]).fullmatch(w)
    ]
    assert wrong == []
    assert stems[words.index("say")] == "sai"  # the kept part changed: the case it allows for


def test_only_whole_words_beginning_like_a_stem_are_found() -> None:
    pattern = _stem_starts(["sai", "paint", "cello"])
    text = "she says: repainted paintings, a cello_case and saints (paint2)"
    assert pattern.findall(text) == ["says", "paintings", "cello", "saints", "paint2"]


def test_varints_read_sqlite_variable_length_integers() -> None:
    assert varints(bytes([0x05, 0x81, 0x00, 0xFF, 0x7F])) == [5, 128, 16_383]
    nine = bytes([0xFF] * 8 + [0xAB])  # the ninth byte carries a whole 8 bits
    assert varints(nine + b"\x01") == [(2**56 - 1) << 8 | 0xAB, 1]
    assert varints(b"") == []


def test_only_rarer_terms_find_candidates_in_a_large_scope() -> None:
    total = 20_000
    many = int(FINDING_SHARE * total) + 1  # above the share, and above the floor
    assert many > FINDING_FLOOR
    terms = ["caroline", "adoption", "meeting"]
    assert _finding_terms(terms, [many, 12, 300], total) == ["adoption", "meeting"]
    assert _finding_terms(terms, [many, many + 5, many], total) == ["caroline"]  # the rarest
    # A small scope: every term finds (FTS5 ranks a few hundred matches quickly).
    assert _finding_terms(terms, [400, 12, 300], 600) == terms
