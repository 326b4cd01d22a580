"""The memory browser's HTTP edge under ``/ui``.

``/ui/...`` answers one page shell (no data) for every address; its script reads the key from
the tab's session storage and loads the page's part from ``/ui/part/...`` with
``Authorization: Bearer <key>``: a part is HTML rendered here, every value escaped. A key never
travels in a URL or a cookie. Parts and writes are refused to other sites' pages (their
``Origin``, or a browser's ``Sec-Fetch-Site``, says so); with no API keys configured they are
answered only on a loopback or IP-literal host (a page on a DNS name that resolves here, DNS
rebinding, gets nothing). A scope, memory or task the key may not read is the same 404 as a
missing one. Every response carries a Content-Security-Policy with no inline script or style.
"""

from __future__ import annotations

import ipaddress
import json
import logging
from collections.abc import Awaitable, Callable
from importlib import resources
from typing import Any
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from agentcore.api import errors
from agentcore.api.auth import Gate
from agentcore.api.openspec.http_errors import status_of
from agentcore.api.openspec.stream import ChangeStream
from agentcore.api.ui.pages import NotVisible, PageError, Pages, Scope, Viewer
from agentcore.api.ui.render import render
from agentcore.domain.errors import AgentCoreError, Forbidden, Unauthorized

log = logging.getLogger(__name__)

MAX_FORM_BYTES = 256 * 1024
SECURITY_HEADERS = {
    "content-security-policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
    ),
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}


class UiFace:
    """What the browser's routes need from the running service; built by the app's lifespan."""

    def __init__(self, pages: Pages, gate: Gate, stream: ChangeStream) -> None:
        self.pages = pages
        self.gate = gate
        self.stream = stream


def _html(body: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(body, status, headers=SECURITY_HEADERS)


def _own_site(request: Request, gate: Gate) -> bool:
    """Whether the request comes from this service's own pages (module doc)."""
    host = request.headers.get("host", "")
    origin = request.headers.get("origin")
    if origin is not None and urlsplit(origin).netloc != host and not gate.allows_origin(origin):
        return False
    fetch_site = request.headers.get("sec-fetch-site")
    if fetch_site not in (None, "same-origin", "none") and origin is None:
        return False
    return not gate.open or _literal_host(host)


def _literal_host(host: str) -> bool:
    name = urlsplit(f"//{host}").hostname or ""
    if name == "localhost":
        return True
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


Part = Callable[[UiFace, Viewer, Request], Awaitable[Response]]


def _part(handler: Part) -> Callable[[Request], Awaitable[Response]]:
    """The request admitted (own site, key), the part rendered, every failure a small page."""

    async def endpoint(request: Request) -> Response:
        face: UiFace = request.app.state.ui
        if not _own_site(request, face.gate):
            return _html(render("refused.html", reason="site"), 403)
        try:
            viewer = Viewer(face.gate.authenticate(request.headers.get("authorization")))
        except Unauthorized:
            return _html(render("refused.html", reason="key"), 401)
        try:
            return await handler(face, viewer, request)
        except NotVisible:
            return _html(render("missing.html"), 404)
        except PageError as exc:
            return _problem(exc.error)
        except Forbidden:
            return _html(render("missing.html"), 404)
        except AgentCoreError as exc:
            return _problem(errors.from_exception(exc))
        except Exception:
            log.exception("%s %s failed unexpectedly", request.method, request.url.path)
            return _problem(errors.internal_error())

    return endpoint


def _problem(error: dict[str, Any]) -> Response:
    return _html(render("problem.html", error=error), status_of(error))


def _scope(request: Request) -> Scope:
    return Scope.parse(request.query_params.get("scope"))


async def _scopes(face: UiFace, viewer: Viewer, request: Request) -> Response:
    return _html(render("scopes.html", rows=await face.pages.scopes(viewer), viewer=viewer))


async def _scope_page(face: UiFace, viewer: Viewer, request: Request) -> Response:
    scope = _scope(request)
    query = dict(request.query_params)
    page = await face.pages.memories(viewer, scope, query)
    return _html(render("scope.html", scope=scope, page=page, query=query, viewer=viewer))


async def _search(face: UiFace, viewer: Viewer, request: Request) -> Response:
    scope = _scope(request)
    text = request.query_params.get("q", "").strip()[:2000]
    found = await face.pages.search(viewer, scope, text) if text else None
    return _html(render("search.html", scope=scope, q=text, found=found, viewer=viewer))


async def _memory(face: UiFace, viewer: Viewer, request: Request) -> Response:
    scope = _scope(request)
    shown = await face.pages.memory(viewer, scope, request.query_params.get("id", ""))
    return _html(render("memory.html", scope=scope, viewer=viewer, **shown))


async def _task(face: UiFace, viewer: Viewer, request: Request) -> Response:
    scope = _scope(request)
    shown = await face.pages.task(viewer, scope)
    return _html(render("task.html", scope=scope, viewer=viewer, **shown))


async def _change(face: UiFace, viewer: Viewer, request: Request) -> Response:
    """An edit, delete or promotion from a memory's page: the page's part again (or the
    deleted note), or the method's error."""
    scope = _scope(request)
    form = await _form(request)
    if not await face.pages.change(viewer, scope, form):
        return _html(render("deleted.html", scope=scope))
    shown = await face.pages.memory(viewer, scope, str(form.get("id", "")))
    return _html(render("memory.html", scope=scope, viewer=viewer, **shown))


async def _form(request: Request) -> dict[str, Any]:
    body = await request.body()
    if len(body) > MAX_FORM_BYTES:
        raise PageError(errors.invalid_request("body too large"))
    try:
        form = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise PageError(errors.parse_error()) from None
    if not isinstance(form, dict):
        raise PageError(errors.invalid_request("the body must be a JSON object"))
    return form


async def _stream(face: UiFace, viewer: Viewer, request: Request) -> Response:
    """The open page's scope's changes as Server-Sent Events (read with fetch: an EventSource
    cannot send the key)."""
    scope = _scope(request)
    face.gate.check(viewer.key, "memory.history", scope.ids)
    return StreamingResponse(
        face.stream.frames([scope.key], await face.stream.head()),
        media_type="text/event-stream",
        headers={**SECURITY_HEADERS, "x-accel-buffering": "no"},
    )


async def _shell(request: Request) -> Response:
    return _html(render("shell.html"))


def ui_routes() -> list[BaseRoute]:
    static = StaticFiles(directory=str(resources.files("agentcore.api.ui") / "static"))
    return [
        Route("/ui", _shell, methods=["GET"]),
        Mount("/ui/static", static, name="ui-static"),
        Route("/ui/part/scopes", _part(_scopes), methods=["GET"]),
        Route("/ui/part/scope", _part(_scope_page), methods=["GET"]),
        Route("/ui/part/search", _part(_search), methods=["GET"]),
        Route("/ui/part/memory", _part(_memory), methods=["GET"]),
        Route("/ui/part/memory", _part(_change), methods=["POST"]),
        Route("/ui/part/task", _part(_task), methods=["GET"]),
        Route("/ui/part/stream", _part(_stream), methods=["GET"]),
        Route("/ui/{page:path}", _shell, methods=["GET"]),
    ]
