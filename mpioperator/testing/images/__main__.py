"""hack/build-images.sh: `build [--push HOST:PORT] [--gzip LEVEL]` and `verify [openmpi|mpich|intel ...]`;
`verify` also checks that the operator image installs the operator without its test harness."""

from __future__ import annotations

import argparse
import sys
import time

from mpioperator.testing.images import ensure, mpi, operator_image, verify
from mpioperator.testing.images.contents import installed_package


def _build(args: argparse.Namespace) -> int:
    ensure.check_host()
    with ensure.locked():
        env = ensure.build_env(args.gzip)
        started = time.monotonic()
        with ensure.progress(env):
            images = ensure.build_images(env)
        env.say(f"{len(images)} images built or cached in {time.monotonic() - started:.1f} s")
        if args.push:
            pushed = time.monotonic()
            stats = ensure.push_images(env, images, args.push)
            env.say(f"pushed to {args.push} in {time.monotonic() - pushed:.1f} s: {stats.summary()}")
    for image in images:
        print(f"{image.name} {image.manifest_digest}")
    return 0


def _verify(args: argparse.Namespace) -> int:
    ensure.check_host()
    failures = 0
    with ensure.locked():
        env = ensure.build_env()
        images = {image.name: image for image in ensure.build_images(env)}
        for flavour in args.flavours or list(mpi.FLAVOURS):
            for run, result in verify.verify(env, images[mpi.image_name(flavour)], flavour).items():
                expected = 3 if run == "exit_code" else 0
                failures += result.exit_code != expected
                print(
                    f"== {flavour} {run}: {result.command} -> exit {result.exit_code} (expected {expected})"
                )
                print(result.output.rstrip())
        package = installed_package(env.store, images[operator_image.NAME], "/opt/venv", "mpioperator")
        harness = package.files_under("testing")
        failures += bool(harness) or "app/main.py" not in package.files
        print(
            f"== operator image: {len(package.files)} files of the mpioperator package, "
            f"{len(harness)} of them under mpioperator/testing (expected none)"
        )
    return 1 if failures else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="build-images", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    build = commands.add_parser("build", help="build every image (cached by content), optionally push them")
    build.add_argument("--push", metavar="HOST:PORT", help="registry to push to (plain HTTP)")
    build.add_argument("--gzip", type=int, metavar="LEVEL", help="gzip layers (default: uncompressed)")
    check = commands.add_parser(
        "verify",
        help="run each mpi-pi image's pi in chroots, plain and over ssh; check the operator image's package",
    )
    check.add_argument("flavours", nargs="*", choices=[*mpi.FLAVOURS, []])
    args = parser.parse_args(argv)
    try:
        return _build(args) if args.command == "build" else _verify(args)
    except ensure.ImagesUnavailable as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
