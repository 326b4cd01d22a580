"""Model files shipped inside declared dependencies, found without importing their code and
checked by sha256 before use."""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path

from agentcore.domain.errors import ConfigurationError


def packaged_file(package: str, name: str) -> Path:
    """The path of ``name`` inside the installed ``package`` (its ``__init__`` is not run)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigurationError(
            f"the local embedder needs the {package} package (a dependency of agentcore-memory): "
            "reinstall agentcore-memory, or choose another EMBEDDER"
        )
    return Path(next(iter(spec.submodule_search_locations))) / name


def read_verified(path: Path, expected_sha256: str) -> bytes:
    """The bytes of ``path``, refused unless their sha256 is ``expected_sha256``."""
    try:
        data = path.read_bytes()
    except OSError:
        raise ConfigurationError(f"embedding model file not found or unreadable: {path}") from None
    digest = hashlib.sha256(data).hexdigest()
    if digest != expected_sha256.lower():
        raise ConfigurationError(
            f"embedding model file {path} has sha256 {digest}, expected {expected_sha256}; "
            "reinstall the package it came from"
        )
    return data
