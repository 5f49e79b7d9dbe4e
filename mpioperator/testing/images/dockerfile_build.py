"""Execute a Dockerfile's instructions on local images: each stage is a Workspace, RUN runs in its
chroot, and the last stage is committed as one layer on top of its base image.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from mpioperator.testing.images import dockerfile as df
from mpioperator.testing.images.chroot import Bind
from mpioperator.testing.images.keys import tree_digest
from mpioperator.testing.images.oci import RuntimeConfig, env_lookup, env_set
from mpioperator.testing.images.store import StoredImage
from mpioperator.testing.images.workspace import BuildEnv, Workspace


@dataclass
class _StageState:
    workspace: Workspace
    env: tuple[str, ...]
    args: dict[str, str] = field(default_factory=dict)
    workdir: str = "/"
    user: str = ""
    entrypoint: tuple[str, ...] = ()
    cmd: tuple[str, ...] = ()
    exposed: tuple[str, ...] = ()
    labels: dict[str, str] = field(default_factory=dict)

    def variables(self) -> dict[str, str]:
        return {**self.args, **dict(item.partition("=")[::2] for item in self.env)}

    def runtime(self) -> RuntimeConfig:
        return RuntimeConfig(
            entrypoint=self.entrypoint,
            cmd=self.cmd,
            env=self.env,
            user=self.user,
            working_dir=self.workdir if self.workdir != "/" else "",
            exposed_ports=tuple(sorted(set(self.exposed))),
            labels=dict(self.labels),
        )


def _inside(root: Path, path: str) -> Path:
    """`path` (absolute inside the image) as a host path under `root`, never escaping it."""
    parts = [part for part in PurePosixPath("/", path).parts[1:] if part not in ("", ".")]
    if ".." in parts:
        raise df.DockerfileError(f"path {path} leaves the image root")
    return root.joinpath(*parts)


def _copy_tree(
    source: Path, target: Path, owner: tuple[int, int], skip: df.IgnoreRules | None, base: Path
) -> None:
    """Copy `source` (file, link or directory contents) to `target`, owned by `owner`."""
    if source.is_dir() and not source.is_symlink():
        target.mkdir(parents=True, exist_ok=True)
        os.lchown(target, *owner)
        for child in sorted(source.iterdir()):
            if skip is not None and skip.ignored(child.relative_to(base).as_posix()):
                continue
            _copy_tree(child, target / child.name, owner, skip, base)
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_symlink() or target.is_file():
        target.unlink()
    if source.is_symlink():
        target.symlink_to(os.readlink(source))
    else:
        shutil.copy2(source, target)
    os.lchown(target, *owner)


def _owner(flags: Mapping[str, str]) -> tuple[int, int]:
    chown = flags.get("chown")
    if not chown:
        return (0, 0)
    user, _, group = chown.partition(":")
    if not user.isdigit() or not (group or user).isdigit():
        raise df.DockerfileError(f"--chown={chown}: only numeric uid[:gid] is supported")
    return int(user), int(group or user)


def context_files(instructions: Sequence[df.Instruction], context: Path, ignore: df.IgnoreRules) -> list[str]:
    """Every context file a COPY (without --from) reads, relative to the context, ignore rules applied."""
    files: set[str] = set()
    for instruction in instructions:
        if instruction.keyword != "COPY" or "from" in instruction.flags:
            continue
        sources, _ = df.copy_operands(instruction.arguments)
        for pattern in sources:
            for match in sorted(context.glob(pattern.strip("/"))):
                paths = [match] if not match.is_dir() else [p for p in match.rglob("*") if not p.is_dir()]
                for path in paths:
                    relative = path.relative_to(context).as_posix()
                    if not ignore.ignored(relative):
                        files.add(relative)
    return sorted(files)


def dockerfile_inputs(dockerfile: Path, context: Path) -> str:
    """Digest of the Dockerfile and every context file it copies: the image's content-based cache key part."""
    ignore_file = context / ".dockerignore"
    ignore = df.IgnoreRules.parse(ignore_file.read_text() if ignore_file.exists() else "")
    files = context_files(df.parse(dockerfile.read_text()), context, ignore)
    return tree_digest(context, files) + ":" + tree_digest(dockerfile.parent, [dockerfile.name])


class DockerfileBuild:
    def __init__(
        self,
        env: BuildEnv,
        dockerfile: Path,
        context: Path,
        *,
        images: Mapping[str, StoredImage],
        build_args: Mapping[str, str],
        run_binds: Sequence[Bind] = (),
        run_env: Mapping[str, str] | None = None,
    ):
        self.env = env
        self.dockerfile = dockerfile
        self.context = context
        self.images = images
        self.build_args = dict(build_args)
        self.run_binds = list(run_binds)
        self.run_env = dict(run_env or {})
        ignore_file = context / ".dockerignore"
        self.ignore = df.IgnoreRules.parse(ignore_file.read_text() if ignore_file.exists() else "")

    def build(self, name: str, key: str) -> StoredImage:
        stages = df.stages(df.parse(self.dockerfile.read_text()), self.build_args)
        done: dict[str, _StageState] = {}
        with contextlib.ExitStack() as stack:
            state: _StageState | None = None
            for stage in stages:
                base = self.images.get(stage.base)
                if base is None:
                    raise df.DockerfileError(
                        f"FROM {stage.base}: not a local image (known: {', '.join(sorted(self.images))})"
                    )
                label = stage.name or f"stage-{stage.index}"
                self.env.say(f"{name}: Dockerfile stage {label} (FROM {stage.base})")
                workspace = stack.enter_context(Workspace(self.env, base, f"{name}-{label}"))
                state = _StageState(workspace, base.runtime.env, user=base.runtime.user)
                state.workdir = base.runtime.working_dir or "/"
                state.entrypoint, state.cmd = base.runtime.entrypoint, base.runtime.cmd
                state.exposed, state.labels = base.runtime.exposed_ports, dict(base.runtime.labels)
                for instruction in stage.instructions:
                    self._execute(instruction, state, done)
                done[label] = state
                done[str(stage.index)] = state
            assert state is not None
            return state.workspace.commit(
                key, state.runtime(), f"Dockerfile {self.dockerfile.name}", name=name
            )

    def _execute(
        self, instruction: df.Instruction, state: _StageState, done: Mapping[str, _StageState]
    ) -> None:
        keyword = instruction.keyword
        text = (
            df.expand(instruction.arguments, state.variables()) if keyword != "RUN" else instruction.arguments
        )
        root = state.workspace.root
        if keyword == "ARG":
            name, default = df.arg_default(text)
            state.args[name] = self.build_args.get(name, default or "")
        elif keyword == "ENV":
            for name, value in df.key_values(text):
                state.env = env_set(state.env, name, value)
        elif keyword == "LABEL":
            state.labels.update(df.key_values(text))
        elif keyword == "WORKDIR":
            state.workdir = str(PurePosixPath(state.workdir, text))
            _inside(root, state.workdir).mkdir(parents=True, exist_ok=True)
        elif keyword == "USER":
            state.user = text
        elif keyword == "EXPOSE":
            state.exposed = (*state.exposed, *(df.exposed_port(word) for word in text.split()))
        elif keyword == "ENTRYPOINT":
            state.entrypoint, state.cmd = tuple(df.command_of(text)), ()
        elif keyword == "CMD":
            state.cmd = tuple(df.command_of(text))
        elif keyword == "COPY":
            self._copy(instruction, text, state, done)
        elif keyword == "RUN":
            self._run(instruction, state)
        else:
            raise df.DockerfileError(f"line {instruction.line}: {keyword} is not supported by this builder")

    def _copy(
        self, instruction: df.Instruction, text: str, state: _StageState, done: Mapping[str, _StageState]
    ) -> None:
        sources, destination = df.copy_operands(text)
        source_stage = instruction.flags.get("from")
        if source_stage is not None:
            if source_stage not in done:
                raise df.DockerfileError(
                    f"line {instruction.line}: COPY --from={source_stage}: no such stage"
                )
            source_root, skip = done[source_stage].workspace.root, None
        else:
            source_root, skip = self.context, self.ignore
        target = _inside(state.workspace.root, str(PurePosixPath(state.workdir, destination)))
        into_directory = destination.endswith("/") or len(sources) > 1
        owner = _owner(instruction.flags)
        for pattern in sources:
            matches = sorted(source_root.glob(pattern.strip("/"))) if source_stage is None else []
            if source_stage is not None:
                matches = [_inside(source_root, pattern)]
            if not matches or not all(m.exists() or m.is_symlink() for m in matches):
                raise df.DockerfileError(f"line {instruction.line}: COPY source {pattern} not found")
            for match in matches:
                relative = match.relative_to(source_root).as_posix()
                if skip is not None and skip.ignored(relative):
                    continue
                if match.is_dir() and not match.is_symlink():
                    _copy_tree(match, target, owner, skip, source_root)
                else:
                    file_target = target / match.name if into_directory or target.is_dir() else target
                    _copy_tree(match, file_target, owner, skip, source_root)

    def _run(self, instruction: df.Instruction, state: _StageState) -> None:
        form = df.exec_form(instruction.arguments)
        command = form if form is not None else ["/bin/sh", "-c", instruction.arguments]
        environment = {**state.args, **dict(item.partition("=")[::2] for item in state.env), **self.run_env}
        path = env_lookup(state.env, "PATH")
        if path:
            environment["PATH"] = path
        chroot = state.workspace.chroot(self.run_binds, environment)
        wrapped = ["/bin/sh", "-c", 'cd "$0" && exec "$@"', state.workdir, *command]
        user = state.user or None
        chroot.run(wrapped, user=user, log=self.env.log)
