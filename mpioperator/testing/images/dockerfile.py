"""A Dockerfile read into instructions, and the pure rules for executing them: variable expansion,
stage resolution, COPY sources, .dockerignore matching. Only the instructions the project's Dockerfile
uses are supported; anything else is an error, never silently skipped.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

SUPPORTED = ("ARG", "FROM", "WORKDIR", "COPY", "RUN", "USER", "ENV", "EXPOSE", "ENTRYPOINT", "CMD", "LABEL")


class DockerfileError(ValueError):
    pass


@dataclass(frozen=True)
class Instruction:
    keyword: str
    arguments: str  # the rest of the (joined) line, stripped
    line: int
    flags: Mapping[str, str] = field(default_factory=dict)  # --from=..., --chown=...


def _logical_lines(text: str) -> Iterable[tuple[int, str]]:
    """Join backslash continuations; drop comments and blank lines. Yields (first line number, text)."""
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if pending and stripped.startswith("#"):
            continue  # a comment inside a continued instruction
        if not pending:
            start = number
        if stripped.endswith("\\"):
            pending.append(stripped[:-1].strip())
            continue
        pending.append(stripped)
        yield start, " ".join(part for part in pending if part)
        pending = []
    if pending:
        yield start, " ".join(part for part in pending if part)


def parse(text: str) -> list[Instruction]:
    instructions = []
    for number, line in _logical_lines(text):
        keyword, _, rest = line.partition(" ")
        keyword = keyword.upper()
        if keyword not in SUPPORTED:
            raise DockerfileError(f"line {number}: {keyword} is not supported by this builder")
        flags: dict[str, str] = {}
        rest = rest.strip()
        if keyword in ("COPY", "FROM"):
            while rest.startswith("--"):
                flag, _, rest = rest.partition(" ")
                name, _, value = flag[2:].partition("=")
                flags[name] = value
                rest = rest.strip()
        instructions.append(Instruction(keyword, rest, number, flags))
    return instructions


_VARIABLE = re.compile(
    r"\$(?:\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)(?::(?P<op>[-+])(?P<word>[^}]*))?\}|(?P<bare>[A-Za-z_][A-Za-z0-9_]*))"
)


def expand(text: str, variables: Mapping[str, str]) -> str:
    """$VAR, ${VAR}, ${VAR:-default} and ${VAR:+alternative}, as Docker expands them."""

    def replace(match: re.Match[str]) -> str:
        name = match.group("braced") or match.group("bare")
        value = variables.get(name, "")
        operator = match.group("op")
        if operator == "-":
            return value or match.group("word")
        if operator == "+":
            return match.group("word") if value else ""
        return value

    return _VARIABLE.sub(replace, text)


def exec_form(arguments: str) -> list[str] | None:
    """The JSON array form of RUN/CMD/ENTRYPOINT, or None for the shell form."""
    if not arguments.startswith("["):
        return None
    try:
        value = json.loads(arguments)
    except json.JSONDecodeError:
        return None
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise DockerfileError(f"not a JSON array of strings: {arguments}")
    return value


def command_of(arguments: str) -> list[str]:
    """CMD/ENTRYPOINT: the exec form as is, the shell form under /bin/sh -c."""
    form = exec_form(arguments)
    return form if form is not None else ["/bin/sh", "-c", arguments]


def key_values(arguments: str) -> list[tuple[str, str]]:
    """ENV/LABEL: `K=V K2="v 2"` pairs, or the old `K value with spaces` form."""
    words = shlex.split(arguments)
    if words and "=" not in words[0]:
        name, _, value = arguments.partition(" ")
        return [(name, value.strip())]
    pairs = []
    for word in words:
        name, sep, value = word.partition("=")
        if not sep:
            raise DockerfileError(f"expected NAME=value, got {word!r}")
        pairs.append((name, value))
    return pairs


def arg_default(arguments: str) -> tuple[str, str | None]:
    name, sep, value = arguments.partition("=")
    return name.strip(), (value.strip().strip("\"'") if sep else None)


def exposed_port(word: str) -> str:
    return word if "/" in word else f"{word}/tcp"


@dataclass(frozen=True)
class Stage:
    index: int
    base: str  # image name or an earlier stage's name, ARGs expanded
    name: str | None
    instructions: tuple[Instruction, ...]


def stages(instructions: Sequence[Instruction], build_args: Mapping[str, str]) -> list[Stage]:
    """Split at FROM; global ARGs (before the first FROM) expand the FROM lines."""
    global_args: dict[str, str] = {}
    out: list[Stage] = []
    current: list[Instruction] = []
    header: Instruction | None = None

    def close() -> None:
        if header is None:
            return
        words = expand(header.arguments, global_args).split()
        name = None
        if len(words) == 3 and words[1].upper() == "AS":
            name = words[2]
        elif len(words) != 1:
            raise DockerfileError(f"line {header.line}: FROM image [AS name] expected")
        out.append(Stage(len(out), words[0], name, tuple(current)))

    for instruction in instructions:
        if instruction.keyword == "FROM":
            close()
            header, current = instruction, []
        elif header is None:
            if instruction.keyword != "ARG":
                raise DockerfileError(f"line {instruction.line}: only ARG may come before the first FROM")
            name, default = arg_default(instruction.arguments)
            global_args[name] = build_args.get(name, default or "")
        else:
            current.append(instruction)
    close()
    if not out:
        raise DockerfileError("no FROM instruction")
    return out


def copy_operands(arguments: str) -> tuple[list[str], str]:
    form = exec_form(arguments)
    words = form if form is not None else shlex.split(arguments)
    if len(words) < 2:
        raise DockerfileError(f"COPY needs a source and a destination: {arguments}")
    return words[:-1], words[-1]


# ----------------------------------------------------------------------------- .dockerignore


def _pattern_regex(pattern: str) -> re.Pattern[str]:
    out = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        out.append({"*": "[^/]*", "?": "[^/]"}.get(char, re.escape(char)))
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
            pattern = line[1:].strip() if include else line
            pattern = pattern.strip("/").removeprefix("./")
            rules.append((include, _pattern_regex(pattern)))
        return cls(tuple(rules))

    def ignored(self, path: str) -> bool:
        parts = path.strip("/").split("/")
        prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        result = False
        for include, regex in self.rules:
            if any(regex.match(prefix) for prefix in prefixes):
                result = not include
        return result
