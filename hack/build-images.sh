#!/usr/bin/env bash
# Builds the real node's images from their Dockerfiles with buildah (daemonless, chroot isolation, a store
# under the mpioperator cache dir), cached by content, and with --push pushes what the registry lacks.
# The catalog of images is mpioperator/testing/images/catalog.py. Needs root (debootstrap, buildah).
# Usage: hack/build-images.sh [--push 127.0.0.1:PORT] [--only NAME ... | --demo]   -> one "name image-id" line per image
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
component=build-images
# shellcheck source=lib.sh
source "$root/hack/lib.sh"

[ "$(id -u)" = 0 ] || { echo "error: building images needs root (debootstrap, buildah)" >&2; exit 1; }
bash "$root/hack/install-node-packages.sh" debootstrap buildah

# The package itself needs only the standard library.
py="$root/.venv/bin/python"
[ -x "$py" ] || py=python3
cd "$root"
PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}" exec "$py" -m mpioperator.testing.images build "$@"
