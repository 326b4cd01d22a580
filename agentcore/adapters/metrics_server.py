"""A process's metrics over HTTP where no web app serves them (``agentcore worker``): GET
``/metrics`` on a port of its own, from a daemon thread, in Prometheus's text format; with
``AGENTCORE_METRICS_TOKEN`` set it needs that bearer token, as the API's ``/metrics`` does."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app

from agentcore.domain.access import token_matches

log = logging.getLogger(__name__)

StartResponse = Callable[[str, list[tuple[str, str]]], Any]


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        log.debug("metrics: " + format, *args)


def serve_metrics(
    host: str, port: int, registry: CollectorRegistry, token: str | None = None
) -> Callable[[], None]:
    """Serve ``registry`` at ``http://host:port/metrics`` until the returned stop is called."""
    exposition = make_wsgi_app(registry)

    def app(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        if environ.get("PATH_INFO") != "/metrics":
            start_response("404 Not Found", [("content-type", "text/plain")])
            return [b"GET /metrics\n"]
        if token is not None and not token_matches(environ.get("HTTP_AUTHORIZATION"), token):
            headers = [("content-type", "text/plain"), ("www-authenticate", "Bearer")]
            start_response("401 Unauthorized", headers)
            return [b"a metrics token is needed\n"]
        body: Iterable[bytes] = exposition(environ, start_response)
        return body

    server = make_server(host, port, app, server_class=_Server, handler_class=_Quiet)
    thread = threading.Thread(target=server.serve_forever, name="metrics-http", daemon=True)
    thread.start()
    log.info("metrics at http://%s:%d/metrics", host, server.server_port)

    def stop() -> None:
        server.shutdown()
        server.server_close()

    return stop
