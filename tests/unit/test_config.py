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
