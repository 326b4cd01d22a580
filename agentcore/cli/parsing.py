"""The parser classes every command uses, and the type of a group of subcommands."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from typing import TypeAlias

    # Subcommands of the CLI's parser class (a subclass of ArgumentParser).
    Subcommands: TypeAlias = argparse._SubParsersAction[Any]


class Parser(argparse.ArgumentParser):
    """Bad usage is one line on stderr (the usage itself is one ``--help`` away)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


class Command(Parser):
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
