"""What a helper process started by the server (an index builder) needs to end with it."""

from __future__ import annotations

import ctypes
import os
import signal
import sys

_PR_SET_PDEATHSIG = 1


def die_with(parent: int) -> bool:
    """Ask the kernel to kill this process when its parent ends (Linux); False if the parent
    is gone already."""
    if sys.platform == "linux":
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    return os.getppid() == parent
