"""The operator CLI: run the service, migrate, run a worker, and call the API."""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from agentcore.config import Settings, load_settings
from agentcore.domain.access import key_digest, parse_keys
from agentcore.domain.errors import AgentCoreError, ConfigurationError
from agentcore.domain.models import ScopeLevel
from agentcore.logs import configure_logging

DEFAULT_URL = "http://127.0.0.1:8080/rpc"


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        settings = load_settings()
        _configure_logging(settings)
        if getattr(args, "api_key", "") is None and settings.agentcore_api_key is not None:
            args.api_key = settings.agentcore_api_key.get_secret_value()
        return int(args.run(args, settings))
    except AgentCoreError as exc:
        print(f"agentcore: {exc.message}", file=sys.stderr)
        return 2


def _prepare_embedded(settings: Settings) -> None:
    """The embedded default makes its data directory and brings its database up to date."""
    from agentcore.adapters.db.migrate import upgrade

    settings.check_production()  # before anything is made on disk
    if settings.embedded:
        settings.agentcore_data_dir.mkdir(parents=True, exist_ok=True)
        upgrade(settings.sqlalchemy_url)


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
    import uvicorn

    from agentcore.api.app import create_app

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
    _prepare_embedded(settings)
    certfile = args.ssl_certfile or settings.agentcore_ssl_certfile
    keyfile = args.ssl_keyfile or settings.agentcore_ssl_keyfile
    if (certfile is None) != (keyfile is None):
        raise ConfigurationError("TLS needs both a certificate file and a key file")
    uvicorn.run(
        # Several processes: each imports and builds the app itself.
        "agentcore.cli:worker_app" if workers > 1 else create_app(settings),
        factory=workers > 1,
        workers=workers,
        host=args.host,
        port=args.port,
        ssl_certfile=None if certfile is None else str(certfile),
        ssl_keyfile=None if keyfile is None else str(keyfile),
        loop="uvloop",
        http="httptools",
        log_level=settings.log_level.lower(),
        log_config=None,  # uvicorn's lines go through the root handler, in LOG_FORMAT
        access_log=False,
    )
    return 0


def _mcp(_: argparse.Namespace, settings: Settings) -> int:
    from agentcore.api.mcp import serve_stdio

    _prepare_embedded(settings)
    asyncio.run(serve_stdio(settings))
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

    _prepare_embedded(settings)
    done = asyncio.run(reembed_store(settings, lambda n, total: _progress("embedded", n, total)))
    print(file=sys.stderr)
    print(f"{done.memories} memories embedded with {done.current} (was {done.previous})")
    return 0


def _worker(args: argparse.Namespace, settings: Settings) -> int:
    from agentcore.worker import run_worker

    run_worker(settings, args.loglevel, beat=args.beat)
    return 0


def _scope(args: argparse.Namespace) -> dict[str, Any]:
    return {
        level.id_field: value
        for level in ScopeLevel
        if (value := getattr(args, level.id_field)) is not None
    }


async def _call(args: argparse.Namespace) -> Any:
    from agentcore.client import MemoryClient

    scope = _scope(args)
    async with MemoryClient(args.url, api_key=args.api_key) as client:
        if args.action == "add":
            extra: dict[str, Any] = {}
            if args.layer:
                extra["layer"] = args.layer
            if args.tags:
                extra["tags"] = args.tags.split(",")
            if args.metadata:
                extra["metadata"] = json.loads(args.metadata)
            return await client.add(args.content, **scope, **extra)
        if args.action == "get":
            return await client.get(args.memory_id, **scope)
        if args.action == "search":
            return await client.search(args.query, limit=args.limit, **scope)
        if args.action == "list":
            params: dict[str, Any] = {"limit": args.limit, **scope}
            if args.cursor:
                params["cursor"] = args.cursor
            if args.layer:
                params["layer"] = args.layer
            return await client.list_memories(**params)
        return await client.delete(args.memory_id, **scope)


def _memory(args: argparse.Namespace, _: Settings) -> int:
    from agentcore.client import RpcError

    try:
        result = asyncio.run(_call(args))
    except RpcError as exc:
        print(f"agentcore: {exc.code}: {exc.message}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"agentcore: cannot reach {args.url}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    json.dump(result, sys.stdout, indent=2, ensure_ascii=False)
    print()
    return 0


async def _export(args: argparse.Namespace) -> int:
    """Every page of the scope to stdout as JSON Lines, the count on stderr as it goes."""
    from agentcore.client import MemoryClient

    params: dict[str, Any] = {**_scope(args), "limit": 500}
    if args.layers:
        params["layers"] = args.layers.split(",")
    done = 0
    async with MemoryClient(args.url, api_key=args.api_key) as client:
        while True:
            page = await client.call("memory.export", **params)
            for record in page["records"]:
                print(json.dumps(record, ensure_ascii=False))
            done += len(page["records"])
            _progress("exported", done, page["total_count"])
            if page["next_cursor"] is None:
                break
            params["cursor"] = page["next_cursor"]
    print(file=sys.stderr)
    return 0


async def _import(args: argparse.Namespace, source: TextIO, total: int) -> int:
    """The JSON Lines of ``source`` into the scope, 100 records per call (the file is read a
    batch at a time), progress on stderr."""
    from agentcore.client import MemoryClient

    counts = {"imported": 0, "skipped": 0, "expired": 0}
    done = 0
    async with MemoryClient(args.url, api_key=args.api_key) as client:
        while batch := await asyncio.to_thread(_records, source, 100):
            result = await client.call("memory.import", records=batch, **_scope(args))
            for name in counts:
                counts[name] += len(result[name])
            done += len(batch)
            _progress("imported", done, total)
    print(file=sys.stderr)
    print(json.dumps(counts))
    return 0


def _records(source: TextIO, limit: int) -> list[Any]:
    records: list[Any] = []
    while len(records) < limit and (line := source.readline()):
        if line.strip():
            records.append(json.loads(line))
    return records


def _progress(verb: str, done: int, total: int) -> None:
    width = 30
    filled = width * done // total if total else width
    bar = "#" * filled + "." * (width - filled)
    print(f"\r[{bar}] {verb} {done}/{total}", end="", file=sys.stderr, flush=True)


def _transfer(args: argparse.Namespace, _: Settings) -> int:
    from agentcore.client import RpcError

    try:
        if args.command == "export":
            return asyncio.run(_export(args))
        with open(args.file, encoding="utf-8") as source:
            total = sum(1 for line in source if line.strip())
            source.seek(0)
            return asyncio.run(_import(args, source, total))
    except RpcError as exc:
        print(f"\nagentcore: {exc.code}: {exc.message}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"\nagentcore: {exc.strerror or exc}", file=sys.stderr)
        return 1
    except ValueError as exc:  # a line that is not JSON
        print(f"\nagentcore: {args.file} is not JSON Lines: {exc}", file=sys.stderr)
        return 1


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


def _with_scope(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--url", default=DEFAULT_URL, help=f"the service (default {DEFAULT_URL})")
    sub.add_argument("--api-key", help="the API key (default: $AGENTCORE_API_KEY)")
    for level in ScopeLevel:
        flag = "--" + level.id_field.replace("_", "-")
        sub.add_argument(flag, dest=level.id_field, metavar="ID")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agentcore", description=__doc__)
    commands = parser.add_subparsers(required=True, metavar="COMMAND")

    serve = commands.add_parser("serve", help="run the JSON-RPC service")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8080)
    serve.add_argument("--ssl-certfile", type=Path, help="TLS certificate (PEM)")
    serve.add_argument("--ssl-keyfile", type=Path, help="TLS private key (PEM)")
    serve.add_argument(
        "--workers",
        type=int,
        help="serving processes (default $AGENTCORE_WORKERS or 1); more than one needs "
        "DATABASE_URL, REDIS_URL and QDRANT_URL",
    )
    serve.set_defaults(run=_serve)

    mcp = commands.add_parser(
        "mcp", help="serve the MCP tools over stdin/stdout (for a desktop agent host)"
    )
    mcp.set_defaults(run=_mcp)

    migrate = commands.add_parser("migrate", help="bring the database to the newest schema")
    migrate.set_defaults(run=_migrate)

    reembed = commands.add_parser(
        "reembed",
        help="embed every memory again with the configured embedder (service stopped)",
    )
    reembed.set_defaults(run=_reembed)
    worker = commands.add_parser("worker", help="run a Celery worker")
    worker.add_argument("--loglevel", default="INFO")
    worker.add_argument(
        "--beat", action="store_true", help="also schedule periodic jobs (one worker only)"
    )
    worker.set_defaults(run=_worker)

    memory = commands.add_parser("memory", help="call a running service")
    actions = memory.add_subparsers(required=True, dest="action", metavar="ACTION")
    add = actions.add_parser("add", help="store a memory")
    add.add_argument("content")
    add.add_argument("--layer")
    add.add_argument("--tags", help="comma-separated")
    add.add_argument("--metadata", help="a JSON object")
    get = actions.add_parser("get", help="read a memory")
    get.add_argument("memory_id")
    search = actions.add_parser("search", help="search memories")
    search.add_argument("query")
    search.add_argument("--limit", type=int, default=10)
    list_ = actions.add_parser("list", help="list memories, newest first")
    list_.add_argument("--layer")
    list_.add_argument("--limit", type=int, default=20)
    list_.add_argument("--cursor")
    delete = actions.add_parser("delete", help="delete a memory")
    delete.add_argument("memory_id")
    for sub in (add, get, search, list_, delete):
        _with_scope(sub)
        sub.set_defaults(run=_memory)

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

    export = commands.add_parser("export", help="write a scope's memories as JSON Lines")
    export.add_argument("--layers", help="comma-separated (default: all but working)")
    imports = commands.add_parser("import", help="store JSON Lines of `export` in a scope")
    imports.add_argument("file")
    for sub, name in ((export, "export"), (imports, "import")):
        _with_scope(sub)
        sub.set_defaults(run=_transfer, command=name)
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
