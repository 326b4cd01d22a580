"""Metrics of several processes in one scrape (adapters/prometheus_files.py): real processes
write their metrics to one directory, as ``serve --workers N``'s and the Celery workers do, and
one registry reads them all."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from agentcore.adapters.prometheus_files import clear_stale, mark_dead, scrape_registry

# A process's metrics, as the services declare theirs: argv[1] calls, argv[2] seconds; it then
# waits for its stdin to close, so a test decides when it ends.
_WRITER = """
import sys
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

registry = CollectorRegistry()
calls = Counter("demo_calls_total", "calls", ["method"], registry=registry)
calls.labels("memory.add").inc(int(sys.argv[1]))
Histogram("demo_seconds", "time", registry=registry).observe(float(sys.argv[2]))
spent = Gauge("demo_spent", "spent", multiprocess_mode="mostrecent", registry=registry)
spent.set(float(sys.argv[1]))
Gauge("demo_live", "live", multiprocess_mode="livesum", registry=registry).set(1)
print("written", flush=True)
sys.stdin.read()
"""


@contextmanager
def _writer(directory: Path, calls: int, seconds: float) -> Iterator[int]:
    """A process that wrote its metrics to ``directory``; its id, while it runs."""
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(directory)}
    with subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(calls), str(seconds)],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as process:
        assert process.stdin is not None
        assert process.stdout is not None
        assert process.stdout.readline() == "written\n"
        yield process.pid
        process.stdin.close()
        assert process.wait(timeout=30) == 0


def _scrape(directory: Path) -> dict[str, float]:
    """One scrape of the directory: each sample by name and labels."""
    text = generate_latest(scrape_registry(directory)).decode()
    samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = ",".join(f"{k}={v}" for k, v in sorted(sample.labels.items()))
            samples[f"{sample.name}{{{labels}}}"] = sample.value
    return samples


def test_one_scrape_sums_the_processes(tmp_path: Path) -> None:
    with _writer(tmp_path, 3, 0.1) as first, _writer(tmp_path, 4, 2.0):
        both = _scrape(tmp_path)
        mark_dead(tmp_path, first)  # as a process does when it ends
        after = _scrape(tmp_path)
    assert both["demo_calls_total{method=memory.add}"] == 7
    assert both["demo_seconds_count{}"] == 2
    assert both["demo_seconds_sum{}"] == pytest.approx(2.1)
    assert both["demo_spent{}"] == 4  # the latest set, by the second process
    assert both["demo_live{}"] == 2
    assert after["demo_live{}"] == 1  # a dead process's live gauge is gone
    assert after["demo_calls_total{method=memory.add}"] == 7  # its counts stay


def test_clearing_keeps_the_files_of_running_processes(tmp_path: Path) -> None:
    with _writer(tmp_path, 5, 0.1):
        pass  # ended: its files are a previous run's
    (tmp_path / f"counter_{os.getpid()}.db").write_bytes(b"")  # an earlier process of this id
    with _writer(tmp_path, 2, 0.1) as running:
        deleted = clear_stale(tmp_path)
        left = {path.name for path in tmp_path.glob("*.db")}
        samples = _scrape(tmp_path)
    assert deleted == 5  # the ended process's counter, histogram, 2 gauges; this process's
    assert left
    assert all(name.endswith(f"_{running}.db") for name in left)
    assert samples["demo_calls_total{method=memory.add}"] == 2
