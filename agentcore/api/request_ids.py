"""Each HTTP request's id: the caller's ``X-Request-ID`` when it is sane (1-128 letters, digits
and ``-_.:``; a proxy's or a client's trace id), else a new one. The log records written while
the request is served carry it (``agentcore.logs``) and the response returns it in
``X-Request-ID``, so a caller's report and the service's log lines meet."""

from __future__ import annotations

import re
import uuid

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agentcore.logs import request_id_bound

HEADER = b"x-request-id"
_SANE = re.compile(r"[A-Za-z0-9._:-]{1,128}")


def request_id(presented: str | None) -> str:
    """The presented id when it is sane, else a new one."""
    if presented is not None and _SANE.fullmatch(presented):
        return presented
    return uuid.uuid4().hex


class RequestIds:
    """ASGI middleware: binds the id of each HTTP request and returns it in the response."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        presented = next((v for k, v in scope["headers"] if k == HEADER), None)
        rid = request_id(None if presented is None else presented.decode("latin-1"))
        header = (HEADER, rid.encode())

        async def tagged(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [h for h in message.get("headers", ()) if h[0].lower() != HEADER]
                message = {**message, "headers": [*headers, header]}
            await send(message)

        with request_id_bound(rid):
            await self._app(scope, receive, tagged)
