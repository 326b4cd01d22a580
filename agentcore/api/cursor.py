"""Opaque list cursors: the (created_at, id) of the last row of a page, plus the order (and
the row's importance, for a list sorted by importance)."""

from __future__ import annotations

import base64
import binascii
import json
import math
from datetime import datetime

from agentcore.domain.errors import InvalidParams


def encode(after: tuple[datetime, str], order: str) -> str:
    raw = json.dumps({"t": after[0].isoformat(), "id": after[1], "o": order})
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode(cursor: str, order: str) -> tuple[datetime, str]:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded.encode()))
        after = (datetime.fromisoformat(data["t"]), str(data["id"]))
        same_order = data["o"] == order
    except (ValueError, KeyError, TypeError, binascii.Error):
        raise InvalidParams(
            "cursor is not one this service issued",
            errors=[{"field": "cursor", "message": "invalid cursor"}],
        ) from None
    if not same_order or after[0].tzinfo is None:
        raise InvalidParams(
            "cursor was issued for another order",
            errors=[{"field": "cursor", "message": "order differs from the cursor's"}],
        )
    return after


def encode_ranked(importance: float, after: tuple[datetime, str], order: str) -> str:
    """A cursor of a list sorted by importance: the last row's importance leads its keyset."""
    return encode(after, f"importance-{order}") + "~" + repr(float(importance))


def decode_ranked(cursor: str, order: str) -> tuple[float, tuple[datetime, str]]:
    """(importance, (created_at, id)) of a cursor ``encode_ranked`` issued for ``order``."""
    head, _, importance = cursor.rpartition("~")
    try:
        value = float(importance)
    except ValueError:
        head = ""
    if not head or math.isnan(value):
        raise InvalidParams(
            "cursor was issued for another sort",
            errors=[{"field": "cursor", "message": "sort differs from the cursor's"}],
        )
    return value, decode(head, f"importance-{order}")
