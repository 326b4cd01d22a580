"""COMPASS as an agent uses it, over JSON-RPC through the real app, on the embedded default and
on PostgreSQL + Redis with a real Celery worker: declared stages hold ordinary sentences,
compression meets 10:1 ±20% measured with the project's tokenizer and keeps every critical
memory word for word, the task brief keeps every constraint, an asynchronous completion
returns the same record, and the ACE meta-thinker's methods answer."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient

from agentcore.adapters.tokens import BpeTokenCounter
from agentcore.api.app import create_app
from agentcore.config import Settings
from agentcore.domain.fact_checks import missing_facts
from benchmarks.agent_traces import generate_traces
from tests.agent_trace import CRITICAL, STAGES
from tests.conftest import REDIS_SHIFT, empty_redis, migrate
from tests.e2e.test_rpc_api import result, rpc
from tests.worker_process import celery_worker

REDIS_DB = 12 - REDIS_SHIFT  # this module's own database (the function-scoped fixture empties 13)
TOKENS = BpeTokenCounter()


@pytest.fixture(
    scope="module",
    params=[
        "embedded",
        pytest.param("production", marks=[pytest.mark.postgres, pytest.mark.redis]),
    ],
)
def service(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TestClient]:
    data = tmp_path_factory.mktemp("data")
    if request.param == "embedded":
        settings = Settings(agentcore_data_dir=data)
        migrate(settings.sqlalchemy_url)
        with TestClient(create_app(settings)) as client:
            yield client
        return
    database: str = request.getfixturevalue("postgres_url")
    broker = empty_redis(REDIS_DB)
    settings = Settings(agentcore_data_dir=data / "api", database_url=database, redis_url=broker)
    with (
        celery_worker(data / "worker", database, broker),
        TestClient(create_app(settings)) as client,
    ):
        yield client
    empty_redis(REDIS_DB)


def add_stage(client: TestClient, task_id: str, stage_type: str) -> tuple[str, list[str]]:
    """Declare a stage and add its memories as the agent writes them; returns the stage id and
    the memory ids, each checked to have joined the declared stage."""
    stage_id = result(client, "memory.stage.start", task_id=task_id, stage_type=stage_type)[
        "stage_id"
    ]
    ids = []
    for text in STAGES[stage_type]:
        added = result(
            client, "memory.add", task_id=task_id, content=text, critical=text in CRITICAL
        )
        assert added["stage_id"] == stage_id, f"moved out of its declared stage: {text}"
        ids.append(added["memory_id"])
    return stage_id, ids


def wait_for_job(client: TestClient, job_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        job: dict[str, Any] = result(client, "memory.job.get", job_id=job_id)
        if job["status"] in ("succeeded", "failed"):
            return job
        assert job["status"] in ("queued", "running")
        time.sleep(0.05)
    raise AssertionError(f"job {job_id} did not finish")


def check_stage_memory(memory: dict[str, Any], stage_type: str, raw_ids: list[str]) -> None:
    texts = STAGES[stage_type]
    measured = TOKENS.count("\n".join(texts)) / TOKENS.count(memory["summary"])
    assert memory["compression_ratio"] == pytest.approx(measured, abs=0.001)
    assert 8 <= memory["compression_ratio"] <= 12, memory["quality_metrics"]
    flagged = [text for text in texts if text in CRITICAL]
    assert set(flagged) <= set(memory["critical_facts"]), "flagged memories kept word for word"
    assert missing_facts(memory["critical_facts"], memory["summary"]) == []
    assert memory["quality_metrics"]["retention"] == 1.0
    assert memory["raw_memory_ids"] == raw_ids


def test_a_task_through_its_four_declared_stages(service: TestClient) -> None:
    task = "agent-export-streaming"
    raw: dict[str, list[str]] = {}
    for stage_type in STAGES:
        stage_id, ids = add_stage(service, task, stage_type)
        current = result(service, "memory.stage.current", task_id=task)["stage"]
        assert (current["id"], current["origin"], current["detection"]) == (
            stage_id,
            "declared",
            None,
        )
        done = result(service, "memory.stage.complete", task_id=task, stage_id=stage_id)
        assert done["stage"]["status"] == "completed"
        check_stage_memory(done["stage_memory"], stage_type, ids)
        raw[stage_type] = ids

    for memory_id in raw["planning"][:3]:  # the raw memories stay retrievable
        assert result(service, "memory.get", task_id=task, memory_id=memory_id)["id"] == memory_id

    progress = result(service, "memory.task.progress", task_id=task)
    assert set(CRITICAL) <= set(progress["critical_constraints"])
    assert len(progress["completed_stages"]) == 4
    assert 4 <= progress["performance_metrics"]["brief_compression_ratio"] <= 6
    sizes = {
        level: result(service, "memory.task.context", task_id=task, level=level)["token_count"]
        for level in ("raw", "stage", "task")
    }
    assert sizes["raw"] > sizes["stage"] > sizes["task"]
    brief = result(service, "memory.task.context", task_id=task, level="task", max_tokens=150)
    assert brief["items"][0]["kind"] == "critical_constraints"
    assert brief["token_count"] <= 150


@pytest.mark.parametrize("flag_every", [0, 8, 4])
def test_the_task_level_is_the_most_compact_however_many_constraints(
    service: TestClient, flag_every: int
) -> None:
    """Three stages of 30-40 memories as a coding agent writes them, none to a quarter flagged
    critical: the task level (the constraints, and a brief of what the stage summaries say
    beyond them) is smaller than the stage level, and holds every constraint."""
    [trace] = generate_traces(1, seed=3, size="small")
    task = f"agent-levels-{flag_every}"
    for stage in trace.stages[:3]:
        stage_id = result(service, "memory.stage.start", task_id=task, stage_type=stage.stage_type)
        for n, memory in enumerate(stage.memories):
            flagged = memory.critical or (flag_every > 0 and n % flag_every == 0)
            result(service, "memory.add", task_id=task, content=memory.content, critical=flagged)
        result(service, "memory.stage.complete", task_id=task, stage_id=stage_id["stage_id"])

    views = {
        level: result(service, "memory.task.context", task_id=task, level=level)
        for level in ("raw", "stage", "task")
    }
    sizes = {level: view["token_count"] for level, view in views.items()}
    assert sizes["raw"] > sizes["stage"] > sizes["task"], sizes
    constraints = result(service, "memory.task.progress", task_id=task)["critical_constraints"]
    assert missing_facts(constraints, views["task"]["text"]) == []
    assert [item["kind"] for item in views["task"]["items"]] == [
        "critical_constraints",
        "task_brief",
    ]


def test_waiting_or_not_gives_the_same_record(service: TestClient) -> None:
    waited_stage, waited_ids = add_stage(service, "agent-sync", "execution")
    waited = result(service, "memory.stage.complete", task_id="agent-sync", stage_id=waited_stage)

    stage_id, ids = add_stage(service, "agent-async", "execution")
    started = result(
        service, "memory.stage.complete", task_id="agent-async", stage_id=stage_id, wait=False
    )
    assert started["job_id"]
    assert started["stage_memory"] is None
    job = wait_for_job(service, started["job_id"])
    assert job["status"] == "succeeded", job
    record = job["result"]["stage_memory"]
    check_stage_memory(record, "execution", ids)
    same = ("summary", "critical_facts", "compression_ratio", "insights", "engine", "tokens_in")
    assert {k: record[k] for k in same} == {k: waited["stage_memory"][k] for k in same}
    assert job["result"]["stage"]["status"] == "completed"
    stored = result(service, "memory.stage.get", stage_id=stage_id)["stage_memory"]
    assert stored == record  # the job's record is what was stored
    check_stage_memory(waited["stage_memory"], "execution", waited_ids)


def test_detection_runs_only_where_no_stage_is_declared(service: TestClient) -> None:
    task = "agent-undeclared"
    first = result(service, "memory.add", task_id=task, content="Looked at the export ticket.")
    assert first["stage_id"] is None
    lesson = "Lesson learned: the root cause was a buffered writer, not the database."
    added = result(service, "memory.add", task_id=task, content=lesson)
    current = result(service, "memory.stage.current", task_id=task)["stage"]
    assert (current["id"], current["stage_type"], current["origin"]) == (
        added["stage_id"],
        "reflection",
        "detected",
    )
    detection = current["detection"]
    assert detection["signal"] == "action"
    assert detection["confidence"] >= 0.6
    assert {s["label"] for s in detection["signals"]} >= {"lesson learned", "root cause"}
    assert detection["trigger_memory_id"] == added["memory_id"]
    # Declaring the stage makes it hold: a tool call no longer moves it.
    result(service, "memory.stage.start", task_id=task, stage_type="reflection")
    call = result(
        service,
        "memory.add",
        task_id=task,
        content="Calling tool grep; executed it on the export module.",
        metadata={"kind": "tool_call"},
    )
    assert call["stage_id"] == added["stage_id"]
    held = result(service, "memory.stage.current", task_id=task)["stage"]
    assert (held["id"], held["origin"]) == (added["stage_id"], "declared")


def test_ace_strategic_context_and_interventions(service: TestClient) -> None:
    task = {"task_id": "agent-ace"}
    stage_id, ids = add_stage(service, "agent-ace", "planning")
    calm = result(
        service,
        "memory.ace.strategic_context",
        decision_type="general",
        performance_metrics={"error_rate": 0.05, "progress_rate": 0.2, "coherence": 0.9},
        **task,
    )
    assert calm["signals"] == []
    assert calm["recommended_action"]["action"] == "continue"
    assert set(CRITICAL) & set(STAGES["planning"]) <= set(calm["critical_facts"])
    assert calm["current_stage"]["id"] == stage_id
    assert calm["task_progress"]["current_stage_id"] == stage_id
    assert len(calm["relevant_memories"]) == 10
    # falling coherence asks for the critical facts: they rise in the same ranking
    drifting = result(
        service,
        "memory.ace.strategic_context",
        decision_type="general",
        performance_metrics={"coherence": 0.3},
        **task,
    )
    assert [s["name"] for s in drifting["signals"]] == ["falling_coherence"]
    assert drifting["recommended_action"]["action"] == "context_refresh"
    assert critical_lead(drifting) > critical_lead(calm)

    for n in range(3):
        result(
            service,
            "memory.error.record",
            task_id="agent-ace",
            error_type="incorrect_action",
            description=f"Wrote the CSV header after the first chunk again (try {n}).",
            severity=0.8,
        )
    troubled = result(
        service,
        "memory.ace.strategic_context",
        decision_type="error_recovery",
        performance_metrics={"error_rate": 0.45, "coherence_history": [0.9, 0.8, 0.6]},
        **task,
    )
    names = {s["name"] for s in troubled["signals"]}
    assert {"error_rate", "falling_coherence", "repeated_error_pattern"} <= names
    assert all(s["value"] is not None and s["threshold"] is not None for s in troubled["signals"])
    assert troubled["recommended_action"]["action"] == "replan"
    assert troubled["error_patterns"]
    top = troubled["relevant_memories"][0]["memory"]
    assert top["metadata"].get("kind") == "error"  # error recovery ranks the errors first
    used = ids[:2]
    success = result(
        service,
        "memory.ace.record_intervention",
        intervention_type="replan",
        outcome="success",
        memory_ids=used,
        **task,
    )
    assert [u["memory_id"] for u in success["updated"]] == used
    assert all(
        u["importance"] == pytest.approx(u["importance_before"] + 0.1) for u in success["updated"]
    )
    failure = result(
        service,
        "memory.ace.record_intervention",
        intervention_type="replan",
        outcome="failure",
        memory_ids=used[1:],
        **task,
    )
    [lowered] = failure["updated"]
    assert lowered["importance"] == pytest.approx(lowered["importance_before"] - 0.1)
    history = result(service, "memory.history", memory_id=used[1], **task)["events"]
    actors = [e["actor"] for e in history if e["kind"] == "update"]
    assert actors == [f"ace:{success['intervention_id']}", f"ace:{failure['intervention_id']}"]

    listed = result(service, "memory.ace.interventions", **task)["interventions"]
    assert [i["id"] for i in listed] == [failure["intervention_id"], success["intervention_id"]]
    again = result(service, "memory.ace.strategic_context", decision_type="replan", **task)
    assert again["interventions"] == {
        "total": 2,
        "by_outcome": {"failure": 1, "success": 1},
        "by_type": {"replan": {"failure": 1, "success": 1}},
    }
    # the last replan failed: the recommendation steps up
    assert again["recommended_action"]["action"] == "escalate"


def test_ace_names_its_decisions_in_its_own_words(service: TestClient) -> None:
    """The meta-thinker's vocabulary is its own: a word the service does not know is ranked by
    the general policy, a known one in another spelling by its own, and the result says which."""
    task = {"task_id": "agent-ace-words"}
    add_stage(service, "agent-ace-words", "execution")
    result(
        service,
        "memory.error.record",
        task_id="agent-ace-words",
        error_type="incorrect_action",
        description="Wrote the CSV header after the first chunk again.",
        severity=0.8,
    )
    policies = {}
    for word in ("intervention", "Error-Recovery", "general", "handoff to a human"):
        found = result(service, "memory.ace.strategic_context", decision_type=word, **task)
        assert found["decision_type"] == word
        assert found["relevant_memories"]
        policies[word] = found["policy"]
    assert policies == {
        "intervention": "general",
        "Error-Recovery": "error_recovery",
        "general": "general",
        "handoff to a human": "general",
    }
    recorded = result(
        service,
        "memory.ace.record_intervention",
        intervention_type="context_refresh",
        decision_type="intervention",
        outcome="partial",
        **task,
    )
    assert recorded["intervention"]["decision_type"] == "intervention"


def critical_lead(context: dict[str, Any]) -> float:
    """How far the best critical memory's score is above the best other memory's."""
    hits = context["relevant_memories"]
    critical = [hit["score"] for hit in hits if hit["memory"]["critical"]]
    other = [hit["score"] for hit in hits if not hit["memory"]["critical"]]
    return max(critical, default=0.0) - max(other, default=0.0)


def test_ace_refuses_bad_input_and_changes_nothing(service: TestClient) -> None:
    task = {"task_id": "agent-ace-bad"}
    _, ids = add_stage(service, "agent-ace-bad", "verification")
    for wrong in ("", 7, "x" * 65, "re;plan"):
        bad = rpc(service, "memory.ace.strategic_context", decision_type=wrong, **task)["error"]
        assert (bad["code"], bad["data"]["code"]) == (-32602, "INVALID_PARAMS")
    bad = rpc(
        service, "memory.ace.strategic_context", performance_metrics={"error_rate": 3}, **task
    )["error"]
    assert bad["code"] == -32602
    unknown = rpc(
        service,
        "memory.ace.record_intervention",
        intervention_type="replan",
        outcome="success",
        memory_ids=[ids[0], "no-such-memory"],
        **task,
    )["error"]
    assert unknown["data"]["code"] == "MEMORY_NOT_FOUND"
    assert result(service, "memory.ace.interventions", **task)["interventions"] == []
    assert result(service, "memory.get", memory_id=ids[0], **task)["importance"] == 0.5
    missing = rpc(service, "memory.ace.strategic_context", task_id="never-seen")["error"]
    assert missing["data"]["code"] == "TASK_NOT_FOUND"


def test_the_ace_methods_are_in_the_openrpc_document(service: TestClient) -> None:
    methods = {m["name"] for m in result(service, "rpc.discover")["methods"]}
    assert {
        "memory.ace.strategic_context",
        "memory.ace.record_intervention",
        "memory.ace.interventions",
    } <= methods
