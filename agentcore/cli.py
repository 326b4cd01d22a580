"""The ``agentcore`` command: run the service, migrate, run a worker, manage keys, and call a
running service (the client commands of ``cli_commands``)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import secrets
import signal
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn

from pydantic import SecretStr

from agentcore.cli_commands import register
from agentcore.cli_output import progress
from agentcore.config import Settings, load_settings
from agentcore.domain.access import key_digest, parse_keys
from agentcore.domain.errors import AgentCoreError, ConfigurationError
from agentcore.domain.models import ScopeLevel
from agentcore.logs import configure_logging

SHUTDOWN_GRACE_SECONDS = 10  # how long a stop waits for the requests still running


class _Parser(argparse.ArgumentParser):
    """Bad usage is one line on stderr (the usage itself is one ``--help`` away)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


class _Command(_Parser):
    """A (sub)command's parser: it refuses the arguments it does not know itself, so the line
    names the command they were given to (``agentcore memory add: unrecognized arguments:
    --foo``) rather than ``agentcore``, where argparse would report them."""

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        parsed, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed, extras


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        settings = load_settings()
        if getattr(args, "logs", False):  # the service's commands; client commands stay quiet
            _configure_logging(settings)
        status = int(args.run(args, settings))
        sys.stdout.flush()  # a reader that went away shows here, not at interpreter exit
        return status
    except AgentCoreError as exc:
        print(f"agentcore: {exc.message}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader closed the pipe (`agentcore memory list | head -1`): stop quietly, as a
        # process killed by SIGPIPE would; the rest of the output goes nowhere.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE
    except KeyboardInterrupt:
        return 128 + signal.SIGINT


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


def _configure_logging(settings: Settings) -> None:
    configure_logging(settings)  # LOG_FORMAT text or json (agentcore/logs.py)


def worker_app() -> Any:
    """The app of one of ``serve --workers N``'s processes (each reads the environment and
    builds its own container)."""
    from agentcore.api.app import create_app

    settings = load_settings()
    _configure_logging(settings)
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
            "agentcore.cli:worker_app" if workers > 1 else create_app(settings),
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
    from agentcore.adapters.db.migrate import upgrade

    if settings.embedded:
        settings.agentcore_data_dir.mkdir(parents=True, exist_ok=True)
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
    settings.check_worker(beat=args.beat)  # before the slow imports
    from agentcore.worker import run_worker

    run_worker(settings, args.loglevel, beat=args.beat)
    return 0


def _keys(args: argparse.Namespace, settings: Settings) -> int:
    """Create an API key: print it once, store its hash in the keys file."""
    path = args.file or settings.agentcore_api_keys_file
    if path is None:
        raise ConfigurationError("give --file or set AGENTCORE_API_KEYS_FILE")
    scopes = {
        level.id_field: values.split(",")
        for level in ScopeLevel
        if (values := getattr(args, level.id_field)) is not None
    }
    data = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {"keys": []}
    parse_keys(data)  # a broken file is not written over
    if any(entry.get("id") == args.id for entry in data["keys"]):
        raise ConfigurationError(f"a key with id {args.id!r} exists already in {path}")
    key = "ak_" + secrets.token_urlsafe(32)
    entry = {"id": args.id, "sha256": key_digest(key), "scopes": scopes, "access": args.access}
    data["keys"].append(entry)
    parse_keys(data)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    temporary.chmod(0o600)
    temporary.replace(path)  # the service sees the whole file or the old one
    print(key)
    print(
        f"key {args.id} ({args.access}) added to {path}; the key is shown only now", file=sys.stderr
    )
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="agentcore",
        description="AgentCore Memory: run the service, and call a running one (tables for "
        "people, --json for scripts; --url or $AGENTCORE_URL).",
    )
    commands = parser.add_subparsers(required=True, metavar="COMMAND", parser_class=_Command)

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
    worker.set_defaults(run=_worker, logs=True)

    keys = commands.add_parser("keys", help="manage API keys")
    key_actions = keys.add_subparsers(required=True, metavar="ACTION")
    create = key_actions.add_parser("create", help="create a key: printed once, hash stored")
    create.add_argument("--id", required=True, help="the key's name in logs and metrics")
    create.add_argument("--access", choices=["read", "write", "admin"], required=True)
    create.add_argument("--file", type=Path, help="default: $AGENTCORE_API_KEYS_FILE")
    for level in ScopeLevel:
        flag = "--" + level.id_field.replace("_", "-")
        create.add_argument(flag, dest=level.id_field, metavar="IDS", help="comma-separated or *")
    create.set_defaults(run=_keys)

    register(commands)
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
