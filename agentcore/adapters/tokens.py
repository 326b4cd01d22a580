"""Token counting with OpenAI's BPE, offline: ``bpe-openai`` ships the encoding files
(tiktoken would download them, DESIGN §6)."""

from __future__ import annotations

import warnings
from typing import Any

# The encoding of gpt-4.1-mini, the model that reads the context.
DEFAULT_ENCODING = "o200k_base"


class BpeTokenCounter:
    """Counts tokens as the model would. Special-token text such as ``<|endoftext|>`` in user
    content is counted as ordinary text, never refused. Building one loads the BPE ranks
    (about half a second), so build one per process."""

    def __init__(self, encoding: str = DEFAULT_ENCODING) -> None:
        with warnings.catch_warnings():
            # bpe-openai 0.1.4 reads its packaged files with a deprecated importlib call; it
            # also loads them when imported, hence the import here and not at module level.
            warnings.filterwarnings("ignore", "open_binary is deprecated", DeprecationWarning)
            import bpe_openai  # type: ignore[import-untyped]  # ships no type information

            self._encoding: Any = bpe_openai.get_encoding(encoding)
        self._name = encoding

    @property
    def name(self) -> str:
        return self._name

    def count(self, text: str) -> int:
        return len(self._encoding.encode_ordinary(text))
