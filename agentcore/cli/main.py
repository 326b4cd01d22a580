"""The ``agentcore`` command's entry: its parser, assembled from the command groups, and how
a command's failure reaches the terminal (one line, an exit status)."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence

from agentcore.cli import calls, keys, service
from agentcore.cli.parsing import Command, Parser
from agentcore.config import load_settings
from agentcore.domain.errors import AgentCoreError
from agentcore.logs import configure_logging


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        settings = load_settings()
        if getattr(args, "logs", False):  # the service's commands; client commands stay quiet
            configure_logging(settings)  # LOG_FORMAT text or json (agentcore/logs.py)
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


def _parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="agentcore",
        description="AgentCore Memory: run the service, and call a running one (tables for "
        "people, --json for scripts; --url or $AGENTCORE_URL).",
    )
    commands = parser.add_subparsers(required=True, metavar="COMMAND", parser_class=Command)
    service.register(commands)
    keys.register(commands)
    calls.register(commands)
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
