from __future__ import annotations

import pytest

from agentcore.domain.errors import InvalidScope, MissingIdentifier
from agentcore.domain.models import ScopeIds, ScopeLevel
from agentcore.domain.scopes import owning_level, visible_scope_keys


def test_owning_level_is_the_most_specific_id_given() -> None:
    ids = ScopeIds(user_id="u", session_id="s", org_id="o")
    assert owning_level(ids) is ScopeLevel.USER
    assert owning_level(ScopeIds(task_id="t", agent_id="a")) is ScopeLevel.TASK


def test_explicit_level_needs_its_id() -> None:
    ids = ScopeIds(user_id="u", session_id="s")
    assert owning_level(ids, "session") is ScopeLevel.SESSION
    with pytest.raises(MissingIdentifier, match="org_id"):
        owning_level(ids, "org")
    with pytest.raises(InvalidScope, match="galaxy"):
        owning_level(ids, "galaxy")


def test_a_memory_needs_a_scope() -> None:
    with pytest.raises(MissingIdentifier):
        owning_level(ScopeIds())


def test_visible_keys_are_the_supplied_levels() -> None:
    ids = ScopeIds(user_id="u", session_id="s")
    assert visible_scope_keys(ids) == ["user:u", "session:s"]
    assert visible_scope_keys(ids, ["session"]) == ["session:s"]
    with pytest.raises(MissingIdentifier, match="agent_id"):
        visible_scope_keys(ids, ["agent"])
    with pytest.raises(MissingIdentifier):
        visible_scope_keys(ScopeIds())
