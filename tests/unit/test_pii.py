"""PII redaction and secret detection over the test table: each positive found as its kinds,
each look-alike left alone; precision and recall (by finding) measured over the table."""

from __future__ import annotations

import pytest

from agentcore.domain.pii import REDACTED, PiiKind, find_pii, redact, secret_in
from tests.pii_table import NEGATIVES, POSITIVES, SECRETS


def test_the_table_is_big_enough() -> None:
    assert len(POSITIVES) >= 40
    assert len(NEGATIVES) >= 40


@pytest.mark.parametrize(("text", "kinds"), POSITIVES)
def test_each_positive_is_found(text: str, kinds: list[PiiKind]) -> None:
    assert [f.kind for f in find_pii(text)] == kinds


@pytest.mark.parametrize("text", NEGATIVES)
def test_each_look_alike_is_left_alone(text: str) -> None:
    assert find_pii(text) == []
    assert redact(text).text == text


def test_precision_and_recall_over_the_table() -> None:
    expected = sum(len(kinds) for _, kinds in POSITIVES)
    right = sum(len([f for f in find_pii(text) if f.kind in kinds]) for text, kinds in POSITIVES)
    found = sum(len(find_pii(text)) for text, _ in POSITIVES) + sum(
        len(find_pii(text)) for text in NEGATIVES
    )
    assert right / expected == 1.0  # recall
    assert right / found == 1.0  # precision


def test_redaction_replaces_each_finding_and_counts_it() -> None:
    result = redact("Mail maria.lopez@example.com or call +1 415-555-0134; key sk-" + "a" * 30)
    assert result.text == f"Mail {REDACTED} or call {REDACTED}; key {REDACTED}"
    assert dict(result.counts) == {PiiKind.EMAIL: 1, PiiKind.PHONE: 1, PiiKind.API_KEY: 1}
    assert result.total == 3


@pytest.mark.parametrize(("text", "secret"), SECRETS)
def test_secrets_block_promotion(text: str, secret: bool) -> None:
    assert (secret_in(text) is not None) is secret
