"""Knowledge that updates: what a statement says about which attribute of which subject.

A memory that states a single-valued attribute of a subject ("I live in Berlin": the user's
home is Berlin) fills a **slot** (``user|home``) with a **value** (``berlin``). A newer memory
of the same scope that fills the same slot with another value supersedes it ("I moved to
Munich last month": ``user|home`` = ``munich``): the old memory gets ``valid_to`` and
``superseded_by`` and ranks below the current one (after Graphiti's bi-temporal edges, with
the memory's creation as the time the fact became valid). ``statements`` reads slots from
statements, ``questions`` the slot a question asks for, ``inferred`` updates that name the old
value; the LLM extractor names the slot itself.
"""

from agentcore.domain.updates.questions import asked_slot
from agentcore.domain.updates.statements import statement_of
from agentcore.domain.updates.vocabulary import (
    MAX_SLOT,
    Statement,
    inferred_value,
    normalized_statement,
)

__all__ = [
    "MAX_SLOT",
    "Statement",
    "asked_slot",
    "inferred_value",
    "normalized_statement",
    "statement_of",
]
