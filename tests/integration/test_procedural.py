"""The procedural layer on the real stack (embedded SQLite + qdrant-edge, and PostgreSQL +
Qdrant local mode) with the real local MiniLM embedder."""

from __future__ import annotations

import asyncio

from agentcore.bootstrap import Container
from agentcore.domain.models import ScopeIds
from agentcore.services.memory_manager import ListRequest
from agentcore.services.procedural import ProceduralMemoryService

AGENT = ScopeIds(agent_id="ops-agent", session_id="s1")

# (action, contexts, outcomes): each becomes a procedure once repeated three or more times.
HISTORY = [
    (
        "retry the HTTP call with exponential backoff, {} attempts",
        [
            "the payment gateway answered 503 Service Unavailable",
            "upstream inventory API timed out and returned 503",
            "the shipping provider endpoint was temporarily unavailable (HTTP 503)",
        ],
        [True, True, False, True, True],
    ),
    (
        "clear the pip cache and reinstall the requirements",
        [
            "pip install failed with a hash mismatch for numpy",
            "dependency installation broke because of a corrupted wheel",
        ],
        [True, True, True],
    ),
    (
        "add a composite index on the orders table",
        [
            "the monthly sales report query takes 40 seconds",
            "listing a customer's orders became very slow",
        ],
        [True, True, False],
    ),
    (
        "rotate the expired credentials in the vault",
        [
            "login to the admin console fails with invalid password",
            "the nightly job cannot authenticate to the database",
        ],
        [True, True, True],
    ),
]


def service(stack: Container) -> ProceduralMemoryService:
    return ProceduralMemoryService(
        stack.memory,
        stack.settings.procedural_memory_min_occurrences,
        max_content_length=stack.settings.memory_max_context_length,
    )


async def test_repeated_actions_become_procedures_found_by_a_new_context(
    stack: Container,
) -> None:
    procedures = service(stack)
    for action, contexts, outcomes in HISTORY:
        for n, success in enumerate(outcomes):
            outcome = "the step fixed it" if success else "the problem persisted"
            last = await procedures.record(
                action.format(n + 3), contexts[n % len(contexts)], outcome, success, AGENT
            )
    retry_key = "retry the http call with exponential backoff, <num> attempts"
    page = await stack.memory.list_page(
        ListRequest(AGENT, layer="procedural", metadata={"kind": "procedure"})
    )
    assert page.total_count == len(HISTORY)
    (retry,) = [m for m in page.memories if m.metadata["action_key"] == retry_key]
    assert (retry.metadata["occurrences"], retry.metadata["successes"]) == (5, 4)
    assert retry.metadata["success_rate"] == 0.8
    assert last.procedure is not None
    assert last.procedure.metadata["occurrences"] == 3

    found = await procedures.search(
        "our call to the currency conversion service keeps failing with HTTP 503", AGENT
    )
    assert [m.procedure.id for m in found][:1] == [retry.id]
    assert (found[0].success_rate, found[0].occurrences) == (0.8, 5)
    assert len(found) == len(HISTORY)
    slow = await procedures.search("the orders report query has become slow", AGENT, limit=1)
    assert slow[0].action.startswith("add a composite index")


async def test_racing_writers_share_one_procedure(stack: Container) -> None:
    # Two services stand for two processes: they share the database but not their locks.
    first, second = service(stack), service(stack)
    await asyncio.gather(
        *(
            writer.record(
                f"restart worker {n}", "the job queue is stuck", "drained", n % 3 != 0, AGENT
            )
            for n in range(4)
            for writer in (first, second)
        )
    )
    page = await stack.memory.list_page(
        ListRequest(AGENT, layer="procedural", metadata={"kind": "procedure"})
    )
    assert page.total_count == 1
    assert page.memories[0].key == "procedure:restart worker <num>"
    assert (page.memories[0].metadata["occurrences"], page.memories[0].metadata["successes"]) == (
        8,
        4,
    )
