"""hack/build-images.sh: `build [--push HOST:PORT] [--only NAME ... | --demo]` builds the catalog's images
(cached by content) and pushes what the registry lacks; prints one "name image-id" line per image."""

from __future__ import annotations

import argparse
import sys
import time

from mpioperator.testing.images import catalog, ensure
from mpioperator.testing.images.buildah import BuildahError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="build-images", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    build = commands.add_parser("build", help="build every image (cached by content), optionally push them")
    build.add_argument("--push", metavar="HOST:PORT", help="registry to push to (plain HTTP)")
    build.add_argument(
        "--only",
        metavar="NAME",
        nargs="+",
        help="build these catalog images and the images they are built FROM, not the whole catalog",
    )
    build.add_argument("--demo", action="store_true", help="build only what hack/demo.sh runs")
    args = parser.parse_args(argv)
    wanted = catalog.DEMO_IMAGES if args.demo else args.only
    try:
        env, ids = ensure.build_all(wanted)
        if args.push:
            started = time.monotonic()
            pushed = ensure.push_images(env, ids, args.push)
            env.say(f"pushed {len(pushed)} images to {args.push} in {time.monotonic() - started:.1f} s")
    except (ensure.ImagesUnavailable, BuildahError, RuntimeError, KeyError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    for name, image_id in ids.items():
        print(f"{name} {image_id}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
