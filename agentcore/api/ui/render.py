"""The pages' HTML: Jinja2 templates with autoescaping on, so every value a memory holds is
shown as text (a memory whose content is markup shows that markup, it never runs)."""

from __future__ import annotations

import json
from datetime import datetime
from functools import cache
from typing import Any
from urllib.parse import urlencode

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from agentcore.api.ui.pages import LAYERS
from agentcore.domain.scoring import FACTORS


def when(value: Any) -> str:
    """A time for people: ``2026-11-29 10:04:05 UTC`` (a JSON result's ISO text or a datetime)."""
    if value is None or value == "":
        return "–"
    moment = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def href(page: str, **query: Any) -> str:
    """An address of the browser: ``/ui/<page>?<query>`` (empty values left out)."""
    kept = {name: value for name, value in query.items() if value not in (None, "")}
    return f"/ui/{page}" + (f"?{urlencode(kept)}" if kept else "")


def pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)


@cache
def _environment() -> Environment:
    env = Environment(
        loader=PackageLoader("agentcore.api.ui", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(when=when, pretty=pretty)
    env.globals.update(href=href, FACTORS=FACTORS, LAYERS=LAYERS)
    return env


def render(template: str, **context: Any) -> str:
    return _environment().get_template(template).render(**context)
