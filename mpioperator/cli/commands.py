"""What each `kubectl mpijob` command does, over the SDK's blocking client. Each returns the exit code."""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

import yaml

from mpioperator.api import constants as api
from mpioperator.api.extensions import restarts
from mpioperator.cli import render, yamlread
from mpioperator.cli.convert import convert_text, to_yaml
from mpioperator.client import MPIJobBuilder, MPIJobClient, status
from mpioperator.client.errors import InvalidMPIJob, MPIJobError

Obj = dict[str, Any]
RESOURCE = f"{api.SINGULAR}.{api.GROUP}"


class InputError(MPIJobError):
    """A file that cannot be read or parsed."""


def open_client(args: argparse.Namespace) -> MPIJobClient:
    return MPIJobClient(
        getattr(args, "kubeconfig", None),
        context=getattr(args, "context", None),
        namespace=getattr(args, "namespace", None),
    )


def submit(args: argparse.Namespace, out: TextIO) -> int:
    jobs = read_jobs(args.filename) if args.filename else [job_from_flags(args)]
    if args.dry_run:
        out.write(yaml.safe_dump_all(jobs, sort_keys=False))
        return 0
    with open_client(args) as client:
        for job in jobs:
            created = client.create(job, getattr(args, "namespace", None))
            out.write(f"{RESOURCE}/{created['metadata']['name']} created\n")
    return 0


def job_from_flags(args: argparse.Namespace) -> Obj:
    builder = MPIJobBuilder(args.name, namespace=getattr(args, "namespace", None)).image(args.image)
    builder.workers(args.workers)
    if args.launcher_argv:
        builder.launcher_command(*args.launcher_argv)
    if args.worker_argv:
        builder.worker_command(*args.worker_argv)
    if args.slots is not None:
        builder.slots_per_worker(args.slots)
    if args.implementation:
        builder.implementation(args.implementation)
    if args.ssh_auth_mount_path:
        builder.ssh_auth_mount_path(args.ssh_auth_mount_path)
    if args.run_as_user is not None:
        builder.run_as_user(args.run_as_user)
    if args.cpu or args.memory:
        builder.resources(cpu=args.cpu, memory=args.memory)
    if args.gpus:
        builder.resources(gpus=args.gpus, replica="Worker")
    set_extensions(builder, args)
    return builder.build()


def set_extensions(builder: MPIJobBuilder, args: argparse.Namespace) -> None:
    """The annotation flags of submit, each through the builder's setter (so a bad value is refused the
    same way: by build(), naming the annotation)."""
    if args.worker_startup_deadline_seconds is not None:
        builder.worker_startup_deadline_seconds(args.worker_startup_deadline_seconds)
    if args.keep_failed_launcher:
        builder.keep_failed_launcher()
    if args.launch_agent:
        builder.launch_agent(args.launch_agent)
    if args.wait_for_ssh_port is not None:
        builder.wait_for_ssh_port(args.wait_for_ssh_port)
    if args.restart_policy or args.max_restarts is not None or args.restart_backoff_seconds is not None:
        builder.restart_whole_job(
            args.restart_policy or restarts.ON_WORKER_FAILURE, args.max_restarts, args.restart_backoff_seconds
        )
    if args.debug or args.debug_command or args.debug_worker_command or args.debug_skip_init_containers:
        builder.debug_mode(
            True,
            command=_words(args.debug_command),
            worker_command=_words(args.debug_worker_command),
            skip_init_containers=_types(args.debug_skip_init_containers),
        )
    if args.resume_launcher_command or args.resume_worker_command or args.resume_skip_init_containers:
        builder.on_resume(
            launcher_command=_words(args.resume_launcher_command),
            worker_command=_words(args.resume_worker_command),
            skip_init_containers=_types(args.resume_skip_init_containers),
        )
    if args.launcher_program:
        mca = dict(pair.partition("=")[::2] for pair in args.mca or ())
        builder.launcher_program(
            *shlex.split(args.launcher_program),
            mpirun_args=shlex.split(args.mpirun_args or ""),
            mca=mca,
            mpi_home=args.mpi_home,
        )
    if args.ssh_secret:
        builder.ssh_secret(args.ssh_secret)
    if args.roll_workers:
        builder.roll_workers_on_template_change()
    if args.hostfile_path:
        builder.hostfile_path(args.hostfile_path)
    if args.min_workers is not None or args.max_workers is not None:
        builder.worker_bounds(args.min_workers, args.max_workers)
    if args.progress:
        builder.progress(args.progress)
    if args.stall_timeout_seconds is not None:
        builder.stall_timeout(args.stall_timeout_seconds, fail=args.stall_fail)
    if args.hostfile_addresses:
        builder.hostfile_addresses(args.hostfile_addresses)


def _words(value: str | None) -> list[str] | None:
    return shlex.split(value) if value else None


def _types(value: str | None) -> list[str]:
    return [part.strip() for part in (value or "").split(",") if part.strip()]


def read_text(filename: str) -> str:
    """The file's text; one character past yamlread's bound at most, which that bound then refuses."""
    try:
        if filename == "-":
            return sys.stdin.read(yamlread.MAX_BYTES + 1)
        with Path(filename).open() as file:
            return file.read(yamlread.MAX_BYTES + 1)
    except OSError as exc:
        raise InputError(f"cannot read {filename}: {exc.strerror or exc}") from None


def read_jobs(filename: str) -> list[Obj]:
    """The MPIJobs of a YAML file (several documents allowed); anything else in it is an error."""
    text = read_text(filename)
    try:
        documents = yamlread.load_all(text)
    except yamlread.YamlTooCostly as exc:
        raise InputError(f"{filename} is refused: {exc}") from None
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" (line {where.line + 1})" if where is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(f"{filename} is not valid YAML{line}: {problem}") from None
    if not documents:
        raise InputError(f"{filename} holds no MPIJob")
    for doc in documents:
        if (
            not isinstance(doc, dict)
            or doc.get("kind") != api.KIND
            or doc.get("apiVersion") != api.API_VERSION
        ):
            kind = doc.get("kind") if isinstance(doc, dict) else type(doc).__name__
            raise InvalidMPIJob(
                str((doc.get("metadata") or {}).get("name") or "") if isinstance(doc, dict) else "",
                f"{filename}: expected kind {api.KIND} of {api.API_VERSION}, found {kind}",
            )
    return documents


def list_jobs(args: argparse.Namespace, out: TextIO) -> int:
    with open_client(args) as client:
        jobs = client.list(all_namespaces=args.all_namespaces)
        if not jobs:
            where = "any namespace" if args.all_namespaces else f"namespace {client.namespace}"
            out.write(f"No MPIJobs found in {where}.\n")
            return 0
    out.write(render.jobs_table(jobs, render.now_utc(), with_namespace=args.all_namespaces) + "\n")
    return 0


def describe(args: argparse.Namespace, out: TextIO) -> int:
    with open_client(args) as client:
        job = client.get(args.name)
        pods = client.pods(args.name)
        events = client.events(args.name)
    out.write(render.describe(job, pods, events, render.now_utc()) + "\n")
    return 0


def logs(args: argparse.Namespace, out: TextIO) -> int:
    with open_client(args) as client:
        if not args.follow:
            out.write(client.logs(args.name, tail_lines=args.tail))
            return 0
        for line in client.follow_logs(args.name):
            out.write(line)
            out.flush()
    return 0


def wait(args: argparse.Namespace, out: TextIO) -> int:
    shown: list[str] = []

    def show(job: Obj) -> None:
        line = status.progress(job)
        if not args.quiet and (not shown or shown[-1] != line):
            shown.append(line)
            out.write(f"{args.name}: {line}\n")
            out.flush()

    with open_client(args) as client:
        job = client.wait(args.name, timeout=args.timeout, on_change=show)
    final = status.phase(job)
    if args.quiet:
        out.write(f"{args.name}: {final}\n")
    return 0 if final == api.COND_SUCCEEDED else 1


def delete(args: argparse.Namespace, out: TextIO) -> int:
    with open_client(args) as client:
        client.delete(args.name, wait=args.wait)
    out.write(f"{RESOURCE}/{args.name} deleted\n")
    return 0


def suspend(args: argparse.Namespace, out: TextIO) -> int:
    with open_client(args) as client:
        client.suspend(args.name)
    out.write(f"{RESOURCE}/{args.name} suspended\n")
    return 0


def resume(args: argparse.Namespace, out: TextIO) -> int:
    with open_client(args) as client:
        client.resume(args.name)
    out.write(f"{RESOURCE}/{args.name} resumed\n")
    return 0


def convert(args: argparse.Namespace, out: TextIO) -> int:
    """The converted manifest on stdout, the warnings and notes on stderr, so `> job.yaml` keeps them
    apart: a warning names a field that was not converted, a note where the behaviour differs."""
    conversions = convert_text(read_text(args.filename), args.ssh_auth_mount_path)
    err: TextIO = getattr(args, "err", None) or sys.stderr
    for done in conversions:
        name = done.job["metadata"]["name"]
        for warning in done.warnings:
            err.write(f"warning: {name}: {warning}\n")
        for note in done.notes:
            err.write(f"note: {name}: {note}\n")
    out.write(to_yaml([done.job for done in conversions]))
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace, TextIO], int]] = {
    "submit": submit,
    "list": list_jobs,
    "describe": describe,
    "logs": logs,
    "wait": wait,
    "delete": delete,
    "suspend": suspend,
    "resume": resume,
    "convert": convert,
}
