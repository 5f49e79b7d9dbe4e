"""What a Dockerfile reads: its FROM images and the context files its COPY/ADD instructions name.

Only as much of the Dockerfile syntax as the cache key and the catalog's checks need: the builder
(buildah) does the real parsing. Line continuations and comments are handled; heredocs are not used here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from mpioperator.testing.images.keys import tree_digest


@dataclass(frozen=True)
class Instruction:
    keyword: str
    arguments: str


def instructions(text: str) -> list[Instruction]:
    out: list[Instruction] = []
    pending = ""
    for raw in text.splitlines():
        stripped = raw.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if pending and stripped.startswith("#"):
            continue
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        line = pending + stripped
        pending = ""
        keyword, _, arguments = line.partition(" ")
        out.append(Instruction(keyword.upper(), arguments.strip()))
    if pending:
        keyword, _, arguments = pending.strip().partition(" ")
        out.append(Instruction(keyword.upper(), arguments.strip()))
    return out


def _words(arguments: str) -> list[str]:
    if arguments.startswith("["):
        return [str(word) for word in json.loads(arguments)]
    return arguments.split()


def _substitute(text: str, values: Mapping[str, str]) -> str:
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: values.get(m.group(1) or m.group(2), ""), text)


def from_images(text: str, build_args: Mapping[str, str] | None = None) -> list[str]:
    """The images the stages start from (not earlier stages, not `scratch`), build args applied."""
    args: dict[str, str] = {}
    stages: set[str] = set()
    images: list[str] = []
    for instruction in instructions(text):
        if instruction.keyword == "ARG" and not stages and not images:
            name, _, default = instruction.arguments.partition("=")
            args[name] = (build_args or {}).get(name, default)
        elif instruction.keyword == "FROM":
            words = [word for word in instruction.arguments.split() if not word.startswith("--")]
            image = _substitute(words[0], args)
            if len(words) == 3 and words[1].upper() == "AS":
                stages.add(words[2].lower())
            if image.lower() not in stages and image != "scratch" and image not in images:
                images.append(image)
    return images


def arg_defaults(text: str) -> dict[str, str]:
    """ARG names with a default, wherever declared."""
    out: dict[str, str] = {}
    for instruction in instructions(text):
        if instruction.keyword == "ARG" and "=" in instruction.arguments:
            name, _, default = instruction.arguments.partition("=")
            out[name] = default.strip("'\"")
    return out


def copy_sources(text: str) -> list[str]:
    """The context paths that COPY and ADD (without --from) read."""
    sources: list[str] = []
    for instruction in instructions(text):
        if instruction.keyword not in ("COPY", "ADD"):
            continue
        words = _words(instruction.arguments) if instruction.arguments.startswith("[") else None
        if words is None:
            all_words = instruction.arguments.split()
            if any(word.startswith("--from=") for word in all_words):
                continue
            words = [word for word in all_words if not word.startswith("--")]
            if words and words[0].startswith("["):
                words = _words(" ".join(words))
        sources.extend(words[:-1])
    return sources


# ----------------------------------------------------------------------------- .dockerignore


def _pattern_regex(pattern: str) -> re.Pattern[str]:
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        else:
            out.append({"*": "[^/]*", "?": "[^/]"}.get(pattern[i], re.escape(pattern[i])))
            i += 1
    return re.compile("".join(out) + "$")


@dataclass(frozen=True)
class IgnoreRules:
    """.dockerignore: later rules win, `!` re-includes; a matched directory excludes what it holds."""

    rules: tuple[tuple[bool, re.Pattern[str]], ...]

    @classmethod
    def parse(cls, text: str) -> IgnoreRules:
        rules = []
        for raw in text.splitlines():
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            include = line.startswith("!")
            pattern = (line[1:].strip() if include else line).strip("/").removeprefix("./")
            rules.append((include, _pattern_regex(pattern)))
        return cls(tuple(rules))

    @classmethod
    def of_context(cls, context: Path) -> IgnoreRules:
        path = context / ".dockerignore"
        return cls.parse(path.read_text() if path.exists() else "")

    def ignored(self, path: str) -> bool:
        parts = path.strip("/").split("/")
        prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        result = False
        for include, regex in self.rules:
            if any(regex.match(prefix) for prefix in prefixes):
                result = not include
        return result


def context_files(dockerfile_text: str, context: Path) -> list[str]:
    """Every context file a COPY or ADD reads, relative to the context, .dockerignore applied."""
    ignore = IgnoreRules.of_context(context)
    files: set[str] = set()
    for pattern in copy_sources(dockerfile_text):
        for match in sorted(context.glob(pattern.strip("/") or ".")):
            paths = [match] if not match.is_dir() else [p for p in match.rglob("*") if not p.is_dir()]
            for path in paths:
                relative = path.relative_to(context).as_posix()
                if not ignore.ignored(relative):
                    files.add(relative)
    return sorted(files)


def inputs_digest(dockerfile: Path, context: Path) -> str:
    """Digest of the Dockerfile and every context file it reads."""
    text = dockerfile.read_text()
    return (
        tree_digest(context, context_files(text, context))
        + ":"
        + tree_digest(dockerfile.parent, [dockerfile.name])
    )
