"""Knowledge that updates: what a statement says about which attribute of which subject.

A memory that states a single-valued attribute of a subject ("I live in Berlin": the user's
home is Berlin) fills a **slot** (``user|home``) with a **value** (``berlin``). A newer memory
of the same scope that fills the same slot with another value supersedes it ("I moved to
Munich last month": ``user|home`` = ``munich``): the old memory gets ``valid_to`` and
``superseded_by`` and ranks below the current one (after Graphiti's bi-temporal edges, with
the memory's creation as the time the fact became valid). ``statements`` reads slots from
statements, ``questions`` the slot a question asks for (and whether it asks how things are);
the LLM extractor names the slot itself. What no slot records, ``ranking`` reads at every
search: a newer statement of the same holder that answers the question too ranks first
(``subjects``: whose fact a statement states; ``cues``: what its words allow).
"""

from agentcore.domain.updates.questions import asked_slot
from agentcore.domain.updates.statements import statement_of
from agentcore.domain.updates.vocabulary import (
    MAX_SLOT,
    Statement,
    normalized_statement,
)

__all__ = [
    "MAX_SLOT",
    "Statement",
    "asked_slot",
    "normalized_statement",
    "statement_of",
]
