"""Multi-line tool output, as an agent pastes it into memory: each renderer returns
``(tool, text)``."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from .fill import Fill, hex_digits

ToolOutput = Callable[[Fill], tuple[str, str]]


def _pytest(f: Fill, clean: bool = False) -> tuple[str, str]:
    domain, r = f.ctx.domain, f.rng
    folder = r.choice(domain.test_files).rsplit("/", 1)[0]
    passed = r.randint(f.ctx.suite // 6, f.ctx.suite // 2)
    failed, skipped = 0 if clean else r.randint(1, 3), r.randint(0, 9)
    shown = min(passed + failed + skipped, 120)
    cells = ["."] * shown
    for mark, times in (("F", failed), ("s", min(skipped, 4))):
        for _ in range(times):
            cells[r.randrange(shown)] = mark
    lines = [f"$ pytest {folder} -q"]
    for start in range(0, shown, 60):
        chunk = "".join(cells[start : start + 60])
        end = start + len(chunk)
        lines.append(f"{chunk:<60} [{100 if end >= shown else round(100 * end / shown):3d}%]")
    if failed:
        lines.append("=" * 10 + " short test summary info " + "=" * 10)
        for index in r.sample(range(len(domain.tests)), k=failed):
            error = f(r.choice(domain.errors))
            error = error if len(error) <= 70 else error[:67] + "..."
            home = domain.test_files[index % len(domain.test_files)]
            lines.append(f"FAILED {home}::{domain.tests[index]} - {error}")
    parts = [f"{failed} failed"] if failed else []
    parts.append(f"{passed} passed")
    if skipped:
        parts.append(f"{skipped} skipped")
    lines.append(f"{', '.join(parts)} in {r.uniform(3.0, 260.0):.2f}s")
    return "pytest", "\n".join(lines)


def _traceback(f: Fill) -> tuple[str, str]:
    domain, r = f.ctx.domain, f.rng
    lead = r.choice(("", "stderr from the last run:", "Traceback from the CI log:"))
    lines = [lead] if lead else []
    lines.append("Traceback (most recent call last):")
    for path, func, code in domain.trace:
        lines.append(f'  File "{f(path)}", line {r.randint(20, 480)}, in {func}')
        lines.append(f"    {f(code)}")
    lines.append(f(domain.trace_error))
    return "bash", "\n".join(lines)


def _cell(f: Fill, kind: str) -> str:
    r = f.rng
    if kind.startswith("choice:"):
        return r.choice(kind.removeprefix("choice:").split("/"))
    if kind in ("date", "ts"):
        day = (f.ctx.base_date - timedelta(days=r.randint(0, 30))).isoformat()
        if kind == "date":
            return day
        return f"{day} {r.randint(0, 23):02d}:{r.randint(0, 59):02d}:{r.randint(0, 59):02d}+00"
    makers: dict[str, Callable[[], str]] = {
        "id": lambda: str(r.randint(1000, 99_999)),
        "int": lambda: str(r.randint(2, 5000)),
        "big": lambda: str(r.randint(10_000, 5_000_000)),
        "money": lambda: f"{r.uniform(10.0, 9000.0):.2f}",
        "evt": lambda: "evt_" + hex_digits(r, 12),
        "small": lambda: str(r.randint(1, 9)),
    }
    return makers[kind]()


def _sql(f: Fill) -> tuple[str, str]:
    sql = f.ctx.domain.sql
    rows = [[_cell(f, kind) for _, kind in sql.columns] for _ in range(f.rng.randint(3, 4))]
    widths = [
        max(len(name), *(len(row[i]) for row in rows)) for i, (name, _) in enumerate(sql.columns)
    ]
    numeric = [kind in ("id", "int", "big", "money", "small") for _, kind in sql.columns]
    lines = [
        f'$ psql -h {f(sql.host)} -c "{sql.query}"',
        " " + " | ".join(name.center(w) for (name, _), w in zip(sql.columns, widths, strict=True)),
        "-" + "-+-".join("-" * w for w in widths) + "-",
    ]
    for row in rows:
        cells = zip(row, widths, numeric, strict=True)
        lines.append(" " + " | ".join(c.rjust(w) if num else c.ljust(w) for c, w, num in cells))
    lines.append(f"({len(rows)} rows)")
    return "psql", "\n".join(lines)


def _diff(f: Fill) -> tuple[str, str]:
    path, header, body = f.rng.choice(f.ctx.domain.diffs)
    lines = [f(line) for line in body]
    old = sum(1 for line in lines if not line.startswith("+"))
    new = sum(1 for line in lines if not line.startswith("-"))
    context = f" {header}" if header else ""
    if old == 0:
        head = [f"$ git diff --staged {path}", "--- /dev/null", f"+++ b/{path}"]
        hunk = f"@@ -0,0 +1,{new} @@"
    else:
        start = f.rng.randint(12, 240)
        head = [f"$ git diff {path}", f"--- a/{path}", f"+++ b/{path}"]
        hunk = f"@@ -{start},{old} +{start},{new} @@{context}"
    return "git", "\n".join([*head, hunk, *lines])


def _log(f: Fill) -> tuple[str, str]:
    domain, r = f.ctx.domain, f.rng
    keep = min(len(domain.log_lines), r.randint(3, 4))
    chosen = sorted(r.sample(range(len(domain.log_lines)), k=keep))
    seconds = r.randint(0, 20 * 3600)
    lines = [f"$ {f(domain.log_cmd)}"]
    for index in chosen:
        seconds += r.randint(1, 400)
        hh, rest = divmod(seconds, 3600)
        stamp = f"{f.ctx.base_date.isoformat()}T{hh:02d}:{rest // 60:02d}:{rest % 60:02d}Z"
        lines.append(f(domain.log_lines[index].replace("{ts}", stamp)))
    return "bash", "\n".join(lines)


def _git_log(f: Fill) -> tuple[str, str]:
    r = f.rng
    path = r.choice(f.ctx.domain.files)
    messages = r.sample(f.ctx.catalog.git_messages, k=r.randint(3, 4))
    lines = [f"$ git log --oneline -{len(messages)} -- {path}"]
    lines.extend(f"{hex_digits(r, 7)} {f(message)}" for message in messages)
    return "git", "\n".join(lines)


def _domain_output(f: Fill) -> tuple[str, str]:
    tool, template = f.rng.choice(f.ctx.domain.outputs)
    return tool, f(template)


EXECUTION_OUTPUTS: tuple[ToolOutput, ...] = (
    _pytest,
    _traceback,
    _sql,
    _diff,
    _log,
    _git_log,
    _domain_output,
)
VERIFICATION_OUTPUTS: tuple[ToolOutput, ...] = (lambda f: _pytest(f, clean=True), _log)
