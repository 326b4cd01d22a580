"""Opaque list cursors: the (created_at, id) of the last row of a page, plus the order."""

from __future__ import annotations

import base64
import binascii
import json
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
