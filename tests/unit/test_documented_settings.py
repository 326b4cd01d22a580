"""docs/configuration.md names every setting the service reads."""

from __future__ import annotations

import re
from pathlib import Path

from agentcore.config import Settings

CONFIGURATION = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


def test_every_setting_is_documented() -> None:
    documented = set(re.findall(r"`([A-Z][A-Z0-9_]+)`", CONFIGURATION.read_text(encoding="utf-8")))
    missing = {name.upper() for name in Settings.model_fields} - documented
    assert missing == set(), "settings missing from docs/configuration.md"
