"""One scrape for several processes: prometheus-client's multiprocess mode.

A process started with ``PROMETHEUS_MULTIPROC_DIR`` in its environment (prometheus-client reads
it when imported) keeps the values of every metric it creates in memory-mapped files of that
directory, named after its process id (``counter_1234.db``, ``histogram_1234.db``, ...).
``/metrics`` then reads every file there (``scrape_registry``), so a scrape answered by any
process shows the sum over all of them: each of ``serve --workers N``'s processes, and the
Celery workers given the same directory (where compressions run). The processes must share a
host and a process-id namespace: the files are told apart by process id.

- ``serve`` clears the directory when it starts (``clear_stale``): the files of processes that
  no longer run go (the previous run's), those of running processes stay (a worker's).
- Counters and histograms of a process that ended stay counted until then; gauges say how
  processes combine (``multiprocess_mode``), and a process marks itself dead when it ends
  (``mark_dead``: its ``live*`` gauges go).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from prometheus_client import CollectorRegistry
from prometheus_client.multiprocess import MultiProcessCollector, mark_process_dead

log = logging.getLogger(__name__)


def scrape_registry(directory: Path) -> CollectorRegistry:
    """A registry that collects what every process wrote to ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=str(directory))  # type: ignore[no-untyped-call]
    return registry


def clear_stale(directory: Path) -> int:
    """Make ``directory`` and delete the files of processes that no longer run (and this
    process's, from an earlier process of the same id); how many were deleted."""
    directory.mkdir(parents=True, exist_ok=True)
    deleted = 0
    for path in directory.glob("*.db"):
        pid = _pid(path)
        if pid is None or pid == os.getpid() or not _running(pid):
            path.unlink(missing_ok=True)
            deleted += 1
    if deleted:
        log.info("deleted %d metrics files of ended processes from %s", deleted, directory)
    return deleted


def mark_dead(directory: Path, pid: int | None = None) -> None:
    """This process (or ``pid``) ended: its live gauges no longer count."""
    ended = os.getpid() if pid is None else pid
    mark_process_dead(ended, str(directory))  # type: ignore[no-untyped-call]


def _pid(path: Path) -> int | None:
    """The process id in a file name such as ``gauge_livesum_1234.db``."""
    tail = path.stem.rpartition("_")[2]
    return int(tail) if tail.isdigit() else None


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # running, as another user
        return True
    return True
