from __future__ import annotations

import pytest

from agentcore.config import load_settings
from agentcore.domain.errors import ConfigurationError


def test_defaults_are_the_embedded_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("DATABASE_URL", "QDRANT_URL", "REDIS_URL"):
        monkeypatch.delenv(name, raising=False)
    settings = load_settings()
    assert settings.embedded
    assert settings.sqlalchemy_url.startswith("sqlite+aiosqlite:///")
    assert settings.weights["relevance"] == pytest.approx(0.35)
    assert settings.working_memory_max_tokens == 4000


def test_postgres_urls_use_psycopg3(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABASE_URL", "postgresql://u@db:5432/agentcore")
    assert load_settings().sqlalchemy_url == "postgresql+psycopg://u@db:5432/agentcore"


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("WORKING_MEMORY_TTL", "an hour"),
        ("REDIS_MEMORY_DB", "99"),
        ("EMBEDDER", "word2vec"),
        ("ALERT_THRESHOLD_PCT", "150"),
    ],
)
def test_a_bad_value_names_the_variable(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigurationError, match=name):
        load_settings()


def test_weights_must_sum_to_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_RELEVANCE_WEIGHT", "0.9")
    with pytest.raises(ConfigurationError, match=r"MEMORY_RELEVANCE_WEIGHT.*sum to 1"):
        load_settings()


def test_jobs_go_to_workers_only_when_a_worker_may_open_the_database(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from agentcore.adapters.jobs.local import InProcessJobQueue
    from agentcore.bootstrap.adapters import build_job_queue

    monkeypatch.setenv("REDIS_URL", "redis://127.0.0.1:6379/0")
    sqlite = load_settings()  # with Redis, but the SQLite file: no worker may open it
    assert not sqlite.jobs_on_workers
    assert isinstance(build_job_queue(sqlite, {}), InProcessJobQueue)
    monkeypatch.setenv("DATABASE_URL", "postgresql://u@db:5432/agentcore")
    assert load_settings().jobs_on_workers
    monkeypatch.delenv("REDIS_URL")
    assert not load_settings().jobs_on_workers


def test_the_job_stall_threshold_is_a_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    assert load_settings().job_stall_seconds == 60.0
    monkeypatch.setenv("JOB_STALL_SECONDS", "300")
    assert load_settings().job_stall_seconds == 300.0
    monkeypatch.setenv("JOB_STALL_SECONDS", "0")
    with pytest.raises(ConfigurationError, match="JOB_STALL_SECONDS"):
        load_settings()
