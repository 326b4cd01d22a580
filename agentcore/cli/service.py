"""The commands that run the service on this machine: ``serve``, ``mcp``, ``migrate``,
``reembed`` and ``worker``."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import SecretStr

from agentcore.cli.output import progress
from agentcore.config import Settings, load_settings
from agentcore.domain.errors import ConfigurationError
from agentcore.logs import configure_logging

if TYPE_CHECKING:
    from agentcore.cli.parsing import Subcommands

SHUTDOWN_GRACE_SECONDS = 10  # how long a stop waits for the requests still running


@contextlib.contextmanager
def _data_dir(settings: Settings, command: str, url: str | None = None) -> Iterator[None]:
    """While this process serves the data directory: owned by it alone (a second process
    stops at once, naming this one), made, and its database at the newest schema."""
    from agentcore.adapters.data_dir import own_data_dir

    settings.check_production()  # before anything is made on disk
    if settings.database_url is not None and settings.qdrant_url is not None:
        yield  # every store on disk is a server's: the directory holds nothing to own
        return
    with own_data_dir(settings.agentcore_data_dir, command, url):
        if settings.embedded:
            from agentcore.adapters.db.migrate import upgrade

            upgrade(settings.sqlalchemy_url)
        yield


def worker_app() -> Any:
    """The app of one of ``serve --workers N``'s processes (each reads the environment and
    builds its own container)."""
    from agentcore.api.app import create_app

    settings = load_settings()
    configure_logging(settings)
    return create_app(settings)


def _serve(args: argparse.Namespace, settings: Settings) -> int:
    workers = settings.agentcore_workers if args.workers is None else args.workers
    if workers < 1:
        raise ConfigurationError("--workers must be at least 1")
    if workers > 1 and settings.in_process_stores:
        raise ConfigurationError(
            f"{workers} worker processes need every store to be a server; not set: "
            f"{', '.join(settings.in_process_stores)} (the embedded data directory, vector "
            "engine and working memory belong to one process: run one worker, or configure "
            "the servers)"
        )
    certfile = args.ssl_certfile or settings.agentcore_ssl_certfile
    keyfile = args.ssl_keyfile or settings.agentcore_ssl_keyfile
    if (certfile is None) != (keyfile is None):
        raise ConfigurationError("TLS needs both a certificate file and a key file")
    host = settings.agentcore_host if args.host is None else args.host
    port = settings.agentcore_port if args.port is None else args.port
    with _data_dir(settings, "serve", _address(host, port, tls=certfile is not None)):
        settings = _count_across_processes(settings, workers)
        import uvicorn  # the slow imports once the directory is ours (a second serve stops first)

        from agentcore.api.app import create_app

        uvicorn.run(
            # Several processes: each imports and builds the app itself.
            "agentcore.cli.service:worker_app" if workers > 1 else create_app(settings),
            factory=workers > 1,
            workers=workers,
            host=host,
            port=port,
            ssl_certfile=None if certfile is None else str(certfile),
            ssl_keyfile=None if keyfile is None else str(keyfile),
            loop="uvloop",
            http="httptools",
            log_level=settings.log_level.lower(),
            log_config=None,  # uvicorn's lines go through the root handler, in LOG_FORMAT
            access_log=False,
            # An open change stream (/openspec/v1/knowledge/stream) never ends by itself: past
            # this, a stop cuts what is still open (its client resumes by Last-Event-ID).
            timeout_graceful_shutdown=SHUTDOWN_GRACE_SECONDS,
        )
    return 0


def _count_across_processes(settings: Settings, workers: int) -> Settings:
    """Several serving processes sum their metrics through files (PROMETHEUS_MULTIPROC_DIR,
    by default AGENTCORE_DATA_DIR/metrics), cleared of the previous run's here, before any
    process writes there. The variable is set in this process's environment: prometheus-client
    reads it in each serving process, which inherits it."""
    directory = settings.prometheus_multiproc_dir
    if directory is None and workers > 1:
        directory = settings.agentcore_data_dir / "metrics"
    if directory is None:
        return settings
    from agentcore.adapters.prometheus_files import clear_stale

    directory = directory.resolve()
    clear_stale(directory)
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(directory)  # noqa: TID251
    return settings.model_copy(update={"prometheus_multiproc_dir": directory})


def _address(host: str, port: int, *, tls: bool) -> str:
    """Where a client on this machine reaches ``serve`` (for the data directory's owner file)."""
    if host in ("", "0.0.0.0", "::"):
        host = "127.0.0.1"
    elif ":" in host:
        host = f"[{host}]"
    return f"{'https' if tls else 'http'}://{host}:{port}"


def _mcp(args: argparse.Namespace, settings: Settings) -> int:
    # --url, else $AGENTCORE_URL when it is set (its default is the CLI's, not a choice).
    url = args.url
    if url is None and "agentcore_url" in settings.model_fields_set:
        url = settings.agentcore_url
    if args.api_key is not None:
        settings = settings.model_copy(update={"agentcore_api_key": SecretStr(args.api_key)})
    if url is not None:
        from agentcore.api.mcp import serve_proxy

        secret = settings.agentcore_api_key
        key = None if secret is None else secret.get_secret_value()
        asyncio.run(serve_proxy(url, key, args.timeout))
        return 0
    with _data_dir(settings, "mcp"):
        from agentcore.api.mcp import serve_local  # slow: once the directory is ours

        asyncio.run(serve_local(settings))
    return 0


def _migrate(_: argparse.Namespace, settings: Settings) -> int:
    from agentcore.adapters.data_dir import own_data_dir
    from agentcore.adapters.db.migrate import upgrade

    if settings.embedded:  # the SQLite file is the data directory's: not under a running owner
        with own_data_dir(settings.agentcore_data_dir, "migrate"):
            upgrade(settings.sqlalchemy_url)
    else:
        upgrade(settings.sqlalchemy_url)
    print("database is at the newest schema")
    return 0


def _reembed(_: argparse.Namespace, settings: Settings) -> int:
    from agentcore.bootstrap import reembed_store

    with _data_dir(settings, "reembed"):
        done = asyncio.run(reembed_store(settings, lambda n, total: progress("embedded", n, total)))
    print(file=sys.stderr)
    print(f"{done.memories} memories embedded with {done.current} (was {done.previous})")
    return 0


def _worker(args: argparse.Namespace, settings: Settings) -> int:
    if args.metrics_port is not None:
        settings = settings.model_copy(update={"agentcore_worker_metrics_port": args.metrics_port})
    if args.metrics_host is not None:
        settings = settings.model_copy(update={"agentcore_host": args.metrics_host})
    settings.check_worker(beat=args.beat)  # before the slow imports
    from agentcore.adapters.data_dir import own_data_dir
    from agentcore.worker import run_worker

    if not args.beat:  # a worker keeps nothing in the data directory
        run_worker(settings, args.loglevel)
        return 0
    # Beat keeps its schedule there: one scheduler per directory (two would submit every
    # periodic job twice).
    with own_data_dir(settings.agentcore_data_dir, "worker --beat"):
        run_worker(settings, args.loglevel, beat=True)
    return 0


def register(commands: Subcommands) -> None:
    serve = commands.add_parser("serve", help="run the JSON-RPC service")
    serve.add_argument("--host", help="default: $AGENTCORE_HOST or 127.0.0.1")
    serve.add_argument("--port", type=int, help="default: $AGENTCORE_PORT or 8080")
    serve.add_argument("--ssl-certfile", type=Path, help="TLS certificate (PEM)")
    serve.add_argument("--ssl-keyfile", type=Path, help="TLS private key (PEM)")
    serve.add_argument(
        "--workers",
        type=int,
        help="serving processes (default $AGENTCORE_WORKERS or 1); more than one needs "
        "DATABASE_URL, REDIS_URL and QDRANT_URL",
    )
    serve.set_defaults(run=_serve, logs=True)

    mcp = commands.add_parser(
        "mcp",
        help="serve the MCP tools over stdin/stdout (for a desktop agent host)",
        description="Serve the MCP tools over stdin/stdout: with --url (or $AGENTCORE_URL) "
        "for the service running there, else from this process on $AGENTCORE_DATA_DIR.",
    )
    mcp.add_argument("--url", help="the running service (default: $AGENTCORE_URL when set)")
    mcp.add_argument("--api-key", help="the key it acts as (default: $AGENTCORE_API_KEY)")
    mcp.add_argument(
        "--timeout", type=float, default=30.0, help="seconds per try of a call (with --url)"
    )
    mcp.set_defaults(run=_mcp, logs=True)

    migrate = commands.add_parser("migrate", help="bring the database to the newest schema")
    migrate.set_defaults(run=_migrate)

    reembed = commands.add_parser(
        "reembed",
        help="embed every memory again with the configured embedder (service stopped)",
    )
    reembed.set_defaults(run=_reembed, logs=True)
    worker = commands.add_parser("worker", help="run a Celery worker")
    worker.add_argument("--loglevel", default="INFO")
    worker.add_argument(
        "--beat", action="store_true", help="also schedule periodic jobs (one worker only)"
    )
    worker.add_argument(
        "--metrics-port",
        type=int,
        help="serve GET /metrics here (default: $AGENTCORE_WORKER_METRICS_PORT; none)",
    )
    worker.add_argument(
        "--metrics-host", help="the address it listens on (default: $AGENTCORE_HOST or 127.0.0.1)"
    )
    worker.set_defaults(run=_worker, logs=True)
