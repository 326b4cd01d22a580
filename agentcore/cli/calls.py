"""The CLI's client commands: they call a running service with the sync ``MemoryClient``.

Each prints a table or an indented document for people, or the exact result with ``--json``
(the list commands: one JSON object per record and line, JSON Lines); an error is one line on
stderr (``agentcore: CODE: message``) and exit code 1. They configure no logging, so no
library's log lines reach the terminal.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from operator import itemgetter
from typing import TYPE_CHECKING, Any

import httpx

from agentcore.cli.output import document, table
from agentcore.cli.transfer import export_records, import_records
from agentcore.client import DEFAULT_URL, MemoryClient, RpcError
from agentcore.config import Settings
from agentcore.domain.models import ScopeLevel

Call = Callable[[MemoryClient, argparse.Namespace], Any]
Show = Callable[[Any, argparse.Namespace], list[str]]
Records = Callable[[Any], list[Any]]  # a list command's records in its result

MEMORY_COLUMNS = ("id", "created_at", "layer", "scope", "tags", "content")
SEARCH_COLUMNS = ("score", "id", "layer", "scope", "content")
ERROR_COLUMNS = ("created_at", "error_type", "severity", "stage_type", "error_id", "description")
# The records of the list commands' results (their --json prints one per line).
MEMORIES, HITS, ERRORS = itemgetter("memories"), itemgetter("results"), itemgetter("errors")

if TYPE_CHECKING:
    from agentcore.cli.parsing import Subcommands


def json_object(text: str) -> dict[str, Any]:
    """An argument that must be a JSON object (argparse reports the problem on one line)."""
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("not a JSON object")
    return value


def _names(text: str) -> list[str]:
    return [name for name in text.split(",") if name]


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Run one client command: its call, then its output; errors as one line on stderr."""
    url = args.url or settings.agentcore_url
    key = args.api_key
    if key is None and settings.agentcore_api_key is not None:
        key = settings.agentcore_api_key.get_secret_value()
    try:
        with MemoryClient(url, api_key=key, timeout=args.timeout) as client:
            result = args.call(client, args)
    except RpcError as exc:
        return _fail(f"{exc.code}: {_message(exc)}")
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        return _fail(f"cannot reach {url}: {_reason(exc)}")
    except BrokenPipeError:  # stdout's reader went away: the CLI's entry point stops quietly
        raise
    except OSError as exc:  # the file of `import`
        return _fail(f"{exc.filename}: {exc.strerror}" if exc.filename else str(exc))
    except ValueError as exc:  # a line of `import` that is not JSON
        return _fail(f"{args.file} is not JSON Lines: {exc}")
    if result is None:  # `export` wrote its records as it went
        return 0
    if args.json and args.records is not None:  # JSON Lines: `| head -1` is a whole record
        _page_summary(result)
        for record in args.records(result):
            print(json.dumps(record, ensure_ascii=False))
    elif args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
    else:
        for line in args.show(result, args):
            print(line)
    return _status(args, result)


def _fail(message: str) -> int:
    print(f"agentcore: {' '.join(message.split())}", file=sys.stderr)
    return 1


def _message(exc: RpcError) -> str:
    """The message and every failing field (the exception's text shows the first few)."""
    problems = exc.field_errors
    return f"{exc.message}: {'; '.join(problems)}" if problems else exc.message


def _reason(exc: Exception) -> str:
    if isinstance(exc, httpx.HTTPStatusError):
        return f"HTTP {exc.response.status_code}"
    return str(exc) or type(exc).__name__


def _status(args: argparse.Namespace, result: Any) -> int:
    """``health`` exits 1 unless every component is up."""
    if getattr(args, "health", False) and isinstance(result, dict):
        return 0 if result.get("status") == "ok" else 1
    return 0


def _scope(args: argparse.Namespace) -> dict[str, Any]:
    return {
        level.id_field: value
        for level in ScopeLevel
        if (value := getattr(args, level.id_field, None)) is not None
    }


def _given(args: argparse.Namespace, *names: str) -> dict[str, Any]:
    """The scope ids and those of ``names`` the command line gave."""
    options = {name: value for name in names if (value := getattr(args, name)) is not None}
    return {**_scope(args), **options}


# Memories.
def _add(c: MemoryClient, a: argparse.Namespace) -> Any:
    options = _given(a, "layer", "tags", "metadata", "stage_id")
    if a.critical:
        options["critical"] = True
    return c.add(a.content, **options)


def _show_added(result: Any, _: argparse.Namespace) -> list[str]:
    memory = result["memory"]
    fields = ("layer", "scope", "stage_id", "tags", "content")
    return document({"memory_id": result["memory_id"], **{f: memory.get(f) for f in fields}})


def _show_search(result: Any, _: argparse.Namespace) -> list[str]:
    rows = [{"score": hit["score"], **hit["memory"]} for hit in result["results"]]
    return table(rows, SEARCH_COLUMNS)


def _show_list(result: Any, _: argparse.Namespace) -> list[str]:
    _page_summary(result)
    return table(result["memories"], MEMORY_COLUMNS)


def _page_summary(result: Any) -> None:
    """A page of ``memory list`` on stderr (``20 of 120; next page: --cursor …``)."""
    if "memories" in result and "total_count" in result:
        shown, total, cursor = len(result["memories"]), result["total_count"], result["next_cursor"]
        more = "" if cursor is None else f"; next page: --cursor {cursor}"
        print(f"{shown} of {total}{more}", file=sys.stderr)


def _show_deleted(result: Any, a: argparse.Namespace) -> list[str]:
    return [f"deleted {a.memory_id}" if result["deleted"] else f"{a.memory_id}: nothing to delete"]


def _show_document(result: Any, _: argparse.Namespace) -> list[str]:
    return document(result) if isinstance(result, dict) else [json.dumps(result)]


def _show_current(result: Any, a: argparse.Namespace) -> list[str]:
    return [f"task {a.task} has no active stage"] if result["stage"] is None else document(result)


_SCOPE = tuple(level.id_field for level in ScopeLevel)


class _Builder:
    """Adds client commands: each gets ``--url``, ``--api-key``, ``--json``, ``--timeout`` and
    the scope id flags it takes."""

    def __init__(self) -> None:
        self.common = argparse.ArgumentParser(add_help=False)
        self.common.add_argument("--url", help=f"default: $AGENTCORE_URL or {DEFAULT_URL}")
        self.common.add_argument("--api-key", help="default: $AGENTCORE_API_KEY")
        self.common.add_argument("--json", action="store_true", help="the exact result as JSON")
        self.common.add_argument("--timeout", type=float, default=30.0, help="seconds per try")

    def command(
        self,
        group: Subcommands,
        name: str,
        summary: str,
        call: Call,
        show: Show = _show_document,
        records: Records | None = None,
        scope: tuple[str, ...] = _SCOPE,
    ) -> argparse.ArgumentParser:
        """``records``: a list command's records, printed one per line with ``--json``."""
        sub: argparse.ArgumentParser = group.add_parser(
            name, help=summary, description=summary, parents=[self.common]
        )
        for field in scope:
            sub.add_argument("--" + field.replace("_", "-"), dest=field, metavar="ID")
        sub.set_defaults(run=run, call=call, show=show, records=records)
        return sub


def _group(commands: Subcommands, name: str, summary: str) -> Subcommands:
    parser: argparse.ArgumentParser = commands.add_parser(name, help=summary, description=summary)
    return parser.add_subparsers(required=True, dest="action", metavar="ACTION")


def register(commands: Subcommands) -> None:
    """Add the client commands to the CLI's ``commands``."""
    b = _Builder()
    _memory_commands(b, _group(commands, "memory", "store, find, read, list, delete memories"))
    _stage_commands(b, _group(commands, "stage", "COMPASS stages of a task"))
    _task_commands(b, _group(commands, "task", "a task's progress and context"))
    _error_commands(b, _group(commands, "error", "record errors, read their history, patterns"))

    health = b.command(commands, "health", "status of every component", _health, scope=())
    health.set_defaults(health=True)
    costs = b.command(
        commands,
        "costs",
        "model costs of a month and the budget",
        _costs,
        scope=("agent_id", "task_id"),
    )
    costs.add_argument("--month", help="YYYY-MM (default: this month, UTC)")
    costs.add_argument("--operation")
    call = b.command(
        commands, "call", "call any method with a JSON object of params", _call, scope=()
    )
    call.add_argument("method", help="e.g. memory.stage.start (`call rpc.discover` lists them)")
    call.add_argument("params", nargs="?", type=json_object, default={}, help="a JSON object")

    export = b.command(commands, "export", "write a scope's memories as JSON Lines", _export)
    export.add_argument("--layers", type=_names, help="comma-separated (default: all but working)")
    imports = b.command(
        commands, "import", "store JSON Lines of `export` in a scope", _import, _show_counts
    )
    imports.add_argument("file")


def _memory_commands(b: _Builder, actions: Subcommands) -> None:
    add = b.command(actions, "add", "store a memory", _add, _show_added)
    add.add_argument("content")
    add.add_argument("--layer", help="episodic (default), semantic or procedural")
    add.add_argument("--tags", type=_names, help="comma-separated")
    add.add_argument("--metadata", type=json_object, help="a JSON object")
    add.add_argument("--stage-id")
    add.add_argument("--critical", action="store_true")
    get = b.command(actions, "get", "read a memory", _get)
    get.add_argument("memory_id")
    search = b.command(
        actions, "search", "find memories by meaning and words", _search, _show_search, HITS
    )
    search.add_argument("query")
    search.add_argument("--limit", type=int, default=10)
    search.add_argument("--layers", type=_names, help="comma-separated")
    search.add_argument("--tags", type=_names, help="comma-separated")
    list_ = b.command(actions, "list", "list memories, newest first", _list, _show_list, MEMORIES)
    list_.add_argument("--layer")
    list_.add_argument("--tags", type=_names, help="comma-separated")
    list_.add_argument("--limit", type=int, default=20)
    list_.add_argument("--cursor", help="the next page (printed on stderr)")
    delete = b.command(actions, "delete", "delete a memory", _delete, _show_deleted)
    delete.add_argument("memory_id")


_NOT_TASK = tuple(field for field in _SCOPE if field != "task_id")  # the task is an argument


def _stage_commands(b: _Builder, actions: Subcommands) -> None:
    start = b.command(actions, "start", "start a stage of a task", _start, scope=_NOT_TASK)
    start.add_argument("task", metavar="task_id")
    start.add_argument("stage_type", help="planning, execution, reflection or verification")
    start.add_argument("--detect-transitions", action="store_true")
    current = b.command(
        actions, "current", "the task's active stage", _current, _show_current, scope=_NOT_TASK
    )
    current.add_argument("task", metavar="task_id")
    get = b.command(actions, "get", "a stage and its compressed memory", _stage_get)
    get.add_argument("stage_id")
    complete = b.command(
        actions, "complete", "complete a stage and compress it", _complete, scope=_NOT_TASK
    )
    complete.add_argument("task", metavar="task_id")
    complete.add_argument("stage_id")
    complete.add_argument("--no-wait", action="store_true", help="return a job id at once")


def _task_commands(b: _Builder, actions: Subcommands) -> None:
    progress = b.command(
        actions, "progress", "the task's progress brief", _progress, scope=_NOT_TASK
    )
    progress.add_argument("task", metavar="task_id")
    context = b.command(
        actions, "context", "the task's context for a prompt", _context, scope=_NOT_TASK
    )
    context.add_argument("task", metavar="task_id")
    context.add_argument("--level", choices=["raw", "stage", "task"])
    context.add_argument("--max-tokens", type=int)


def _error_commands(b: _Builder, actions: Subcommands) -> None:
    record = b.command(actions, "record", "record an agent's error", _error_record, scope=_NOT_TASK)
    record.add_argument("task", metavar="task_id")
    record.add_argument(
        "error_type", help="hallucination, missing_info, incorrect_action or context_degradation"
    )
    record.add_argument("description")
    record.add_argument("--severity", type=float, required=True, help="0-1")
    record.add_argument("--stage-id")
    record.add_argument("--context", type=json_object, help="a JSON object")
    record.add_argument("--recovery-action")
    history = b.command(
        actions, "history", "recorded errors, newest first", _error_history, _show_errors, ERRORS
    )
    history.add_argument("--stage-type")
    history.add_argument("--min-severity", type=float)
    history.add_argument("--limit", type=int)
    b.command(actions, "patterns", "patterns found in the recorded errors", _error_patterns)


# What each command calls.
def _get(c: MemoryClient, a: argparse.Namespace) -> Any:
    return c.get(a.memory_id, **_scope(a))


def _search(c: MemoryClient, a: argparse.Namespace) -> Any:
    return c.search(a.query, **_given(a, "limit", "layers", "tags"))


def _list(c: MemoryClient, a: argparse.Namespace) -> Any:
    return c.list(**_given(a, "layer", "tags", "limit", "cursor"))


def _delete(c: MemoryClient, a: argparse.Namespace) -> Any:
    return c.delete(a.memory_id, **_scope(a))


def _start(c: MemoryClient, a: argparse.Namespace) -> Any:
    extra = {"detect_transitions": True} if a.detect_transitions else {}
    return c.stage_start(a.task, a.stage_type, **_scope(a), **extra)


def _current(c: MemoryClient, a: argparse.Namespace) -> Any:
    return c.stage_current(a.task, **_scope(a))


def _stage_get(c: MemoryClient, a: argparse.Namespace) -> Any:
    return c.stage_get(a.stage_id, **_scope(a))


def _complete(c: MemoryClient, a: argparse.Namespace) -> Any:
    extra = {"wait": False} if a.no_wait else {}
    return c.stage_complete(a.task, a.stage_id, **_scope(a), **extra)


def _progress(c: MemoryClient, a: argparse.Namespace) -> Any:
    return c.task_progress(a.task, **_scope(a))


def _context(c: MemoryClient, a: argparse.Namespace) -> Any:
    return c.task_context(a.task, **_given(a, "level", "max_tokens"))


def _error_record(c: MemoryClient, a: argparse.Namespace) -> Any:
    options = _given(a, "stage_id", "context", "recovery_action")
    return c.error_record(a.task, a.error_type, a.description, a.severity, **options)


def _error_history(c: MemoryClient, a: argparse.Namespace) -> Any:
    return c.error_history(**_given(a, "stage_type", "min_severity", "limit"))


def _error_patterns(c: MemoryClient, a: argparse.Namespace) -> Any:
    return c.error_patterns(**_scope(a))


def _show_errors(result: Any, _: argparse.Namespace) -> list[str]:
    return table(result["errors"], ERROR_COLUMNS)


def _health(c: MemoryClient, _: argparse.Namespace) -> Any:
    return c.health()


def _costs(c: MemoryClient, a: argparse.Namespace) -> Any:
    return c.cost_report(**_given(a, "month", "operation"))


def _call(c: MemoryClient, a: argparse.Namespace) -> Any:
    return c.call(a.method, **a.params)


def _export(c: MemoryClient, a: argparse.Namespace) -> None:
    export_records(c, _given(a, "layers"))  # written as it goes: nothing left to show


def _import(c: MemoryClient, a: argparse.Namespace) -> Any:
    return import_records(c, a.file, _scope(a))


def _show_counts(result: Any, _: argparse.Namespace) -> list[str]:
    return [", ".join(f"{name} {count}" for name, count in result.items())]
