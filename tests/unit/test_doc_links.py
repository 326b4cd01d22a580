"""Every relative link of README.md and docs/*.md points at a file that exists, and a link with
an anchor at a heading of that file (GitHub's anchors: lower case, punctuation dropped, spaces
as hyphens)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```.*?^```", re.DOTALL | re.MULTILINE)
CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6} +(.+?) *#*$", re.MULTILINE)


def prose(path: Path) -> str:
    """The page without its code blocks (a ``## line`` in a block is no heading)."""
    return FENCE.sub("", path.read_text(encoding="utf-8"))


def anchors(path: Path) -> set[str]:
    found: set[str] = set()
    for heading in HEADING.findall(prose(path)):
        slug = re.sub(r"[^\w\- ]", "", heading.replace("`", "").strip().lower()).replace(" ", "-")
        number, unique = 0, slug
        while unique in found:  # a repeated heading gets -1, -2, ...
            number += 1
            unique = f"{slug}-{number}"
        found.add(unique)
    return found


def links(path: Path) -> list[str]:
    return LINK.findall(CODE.sub("", prose(path)))


def broken(path: Path) -> list[str]:
    wrong = []
    for target in links(path):
        if re.match(r"^[a-z]+:", target):  # https:, mailto:
            continue
        file, _, anchor = target.partition("#")
        linked = (path.parent / file).resolve() if file else path
        if not linked.exists():
            wrong.append(f"{target}: no such file")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            wrong.append(f"{target}: no such heading")
    return wrong


def test_every_relative_link_points_at_a_file_and_heading_that_exist() -> None:
    wrong = {path.relative_to(ROOT).as_posix(): broken(path) for path in PAGES}
    assert {page: targets for page, targets in wrong.items() if targets} == {}


def test_the_readme_links_every_docs_page() -> None:
    linked = {(ROOT / target.partition("#")[0]).resolve() for target in links(ROOT / "README.md")}
    assert set(PAGES[1:]) - linked == set(), "docs pages the README does not link"


def test_anchors_follow_githubs_rule(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "# The API\n## Every method, by example\n## `memory.add`\n## Notes\n## Notes\n"
        "```\n## Not a heading\n```\n",
        encoding="utf-8",
    )
    assert anchors(page) == {"the-api", "every-method-by-example", "memoryadd", "notes", "notes-1"}


def test_ci_runs_the_readmes_test_command() -> None:
    """``.ci/run`` runs exactly the test command of the README's set-up block."""
    setup = (ROOT / "README.md").read_text(encoding="utf-8").split("\n## Set up\n", 1)[1]
    commands = re.findall(r"^(make \w+)", setup.split("```sh\n", 1)[1].split("```", 1)[0], re.M)
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()[-1]
    assert commands == ["make run", "make test"]
    assert ci == commands[-1]
