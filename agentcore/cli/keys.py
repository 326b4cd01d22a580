"""``agentcore keys create``: an API key printed once, its hash stored in the keys file."""

from __future__ import annotations

import argparse
import json
import secrets
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from agentcore.config import Settings
from agentcore.domain.access import key_digest, parse_keys
from agentcore.domain.errors import ConfigurationError
from agentcore.domain.models import ScopeLevel

if TYPE_CHECKING:
    from agentcore.cli.parsing import Subcommands


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


def register(commands: Subcommands) -> None:
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
