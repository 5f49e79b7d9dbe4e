"""Every relative link in README and the docs leads to a file that exists, and to a heading it has."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

REPO = Path(__file__).resolve().parents[3]
DOCUMENTS = [
    REPO / "README.md",
    REPO / "CONTRIBUTING.md",
    REPO / "examples" / "README.md",
    REPO / "charts" / "mpi-operator" / "README.md",
    *sorted((REPO / "docs").glob("*.md")),
]
# GitHub renders tables, so links inside table cells count too.
MARKDOWN = MarkdownIt("commonmark").enable("table")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def _inline_children(tokens: list[Token]) -> Iterator[Token]:
    for token in tokens:
        if token.type == "inline" and token.children:
            yield from token.children


def link_targets(text: str) -> list[str]:
    """Targets of the links and images a Markdown text renders; code spans and blocks hold none."""
    targets = []
    for token in _inline_children(MARKDOWN.parse(text)):
        if token.type == "link_open":
            targets.append(str(token.attrs["href"]))
        elif token.type == "image":
            targets.append(str(token.attrs["src"]))
    return targets


def heading_anchors(text: str) -> set[str]:
    """The fragment GitHub gives each heading: its text lower-cased, punctuation dropped, spaces as hyphens,
    and `-1`, `-2` ... after a repeated one."""
    tokens = MARKDOWN.parse(text)
    seen: dict[str, int] = {}
    anchors = set()
    for opening, inline in itertools.pairwise(tokens):
        if opening.type != "heading_open":
            continue
        title = "".join(c.content for c in inline.children or [] if c.type in ("text", "code_inline"))
        slug = re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")
        repeats = seen.get(slug, 0)
        seen[slug] = repeats + 1
        anchors.add(f"{slug}-{repeats}" if repeats else slug)
    return anchors


def broken_links(document: Path) -> list[str]:
    broken = []
    for target in link_targets(document.read_text()):
        if SCHEME.match(target):
            continue  # a web address: not ours to check offline
        path, _, fragment = target.partition("#")
        resolved = (document.parent / unquote(path)).resolve() if path else document
        if not resolved.exists():
            broken.append(f"{target}: no such file")
        elif fragment and resolved.suffix == ".md" and fragment not in heading_anchors(resolved.read_text()):
            broken.append(f"{target}: {resolved.name} has no heading #{fragment}")
    return broken


@pytest.mark.parametrize("document", DOCUMENTS, ids=[str(d.relative_to(REPO)) for d in DOCUMENTS])
def test_every_relative_link_leads_to_an_existing_file_and_heading(document: Path) -> None:
    assert broken_links(document) == []


def test_the_check_reports_missing_files_and_headings_and_ignores_code_and_web_addresses(
    tmp_path: Path,
) -> None:
    (tmp_path / "other.md").write_text(
        "# Other\n\n## The `kubectl mpijob` plugin (issue 18)\n\n## Twice\n\n## Twice\n"
    )
    (tmp_path / "chart.png").write_bytes(b"")
    document = tmp_path / "doc.md"
    document.write_text(
        "# Doc\n\n"
        "[fine](other.md) [fine](other.md#the-kubectl-mpijob-plugin-issue-18) [fine](other.md#twice-1)\n"
        "[fine](#doc) ![fine](chart.png) [web](https://example.org/nowhere.md)\n\n"
        "| a | b |\n|---|---|\n| [gone](missing.md) | [wrong](other.md#nothing) |\n\n"
        "`[code](missing.md)`\n\n```\n[block](missing.md)\n```\n"
    )
    assert broken_links(document) == [
        "missing.md: no such file",
        "other.md#nothing: other.md has no heading #nothing",
    ]
