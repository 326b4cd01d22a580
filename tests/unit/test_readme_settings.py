"""The README's Configuration table names every setting the service reads."""

from __future__ import annotations

import re
from pathlib import Path

from agentcore.config import Settings

README = Path(__file__).resolve().parents[2] / "README.md"


def test_every_setting_is_documented() -> None:
    section = README.read_text(encoding="utf-8").split("## Configuration", 1)[1]
    section = section.split("\n## ", 1)[0]
    documented = set(re.findall(r"`([A-Z][A-Z0-9_]+)`", section))
    missing = {name.upper() for name in Settings.model_fields} - documented
    assert missing == set(), "settings missing from the README's Configuration section"
