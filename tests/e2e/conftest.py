from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from agentcore.api.app import create_app
from agentcore.config import Settings
from tests.conftest import migrate


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    """The real app on the embedded default (SQLite, qdrant-edge, local ONNX embedder)."""
    data: Path = tmp_path_factory.mktemp("data")
    settings = Settings(agentcore_data_dir=data)
    migrate(settings.sqlalchemy_url)
    with TestClient(create_app(settings)) as test_client:
        yield test_client
