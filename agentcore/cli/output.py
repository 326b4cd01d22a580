"""Output of the CLI's client commands for people: plain-text tables and indented documents.

``table`` lines rows up in columns (one line per row: newlines become spaces, long cells end in
``…``); ``document`` shows one result as ``key  value`` lines, nested objects indented, empty
values left out, long text in full. Scripts use ``--json`` instead (the exact result).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any

# The widest a table cell grows; the last column (content, descriptions) gets more.
CELL_WIDTH = 36
LAST_CELL_WIDTH = 72
_GAP = "  "


def cell(value: Any, width: int = CELL_WIDTH, *, key: str = "") -> str:
    """One value on one line of at most ``width`` characters."""
    if value is None:
        text = "-"
    elif isinstance(value, bool):
        text = "yes" if value else "no"
    elif isinstance(value, float):
        text = f"{value:.3f}".rstrip("0").rstrip(".") if value else "0"
    elif isinstance(value, str):
        text = _time(value) if key.endswith("_at") else value
    elif isinstance(value, list) and all(not isinstance(v, dict | list) for v in value):
        text = ", ".join(cell(v, width) for v in value)
    else:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str], indent: str = "") -> list[str]:
    """A header line and one line per row; ``columns`` are keys of the rows."""
    cells = [
        [
            cell(row.get(c), LAST_CELL_WIDTH if i == len(columns) - 1 else CELL_WIDTH, key=c)
            for i, c in enumerate(columns)
        ]
        for row in rows
    ]
    header = [c.upper() for c in columns]
    widths = [max(len(line[i]) for line in [header, *cells]) for i in range(len(columns))]
    return [
        indent + _GAP.join(text.ljust(w) for text, w in zip(line, widths, strict=True)).rstrip()
        for line in [header, *cells]
    ]


def document(value: Mapping[str, Any], indent: str = "") -> list[str]:
    """``key  value`` lines; nested objects and lists of objects indented beneath their key."""
    shown = {k: v for k, v in value.items() if v not in (None, "", [], {})}
    width = max((len(k) for k in shown), default=0)
    lines: list[str] = []
    for key, item in shown.items():
        if isinstance(item, dict):
            lines.append(f"{indent}{key}:")
            lines += document(item, indent + "  ")
        elif isinstance(item, list) and any(isinstance(v, dict) for v in item):
            lines.append(f"{indent}{key}:")
            for n, element in enumerate(item, 1):
                lines.append(f"{indent}  [{n}]")
                lines += document(
                    element if isinstance(element, dict) else {"value": element}, indent + "    "
                )
        else:
            text = item if isinstance(item, str) else cell(item, 10_000, key=key)
            first, *rest = text.splitlines() or [""]
            lines.append(f"{indent}{key.ljust(width)}{_GAP}{first}")
            lines += [f"{indent}{' ' * width}{_GAP}{line}" for line in rest]
    return lines


def _time(value: str) -> str:
    """An ISO timestamp to the second (``2026-11-26 00:30:41``); other text as it is."""
    if len(value) >= 19 and value[10] == "T":
        return value[:19].replace("T", " ")
    return value


def progress(verb: str, done: int, total: int) -> None:
    """A progress bar on stderr, redrawn in place (``[####....] exported 120/500``)."""
    width = 30
    filled = width * done // total if total else width
    bar = "#" * filled + "." * (width - filled)
    print(f"\r[{bar}] {verb} {done}/{total}", end="", file=sys.stderr, flush=True)
