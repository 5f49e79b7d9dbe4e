#!/usr/bin/env bash
# Builds the real node's images without Docker (cached by content in the mpioperator cache dir) and,
# with --push, pushes what the registry lacks. Needs root (debootstrap, chroot, mount namespaces).
# Usage: hack/build-images.sh [--push 127.0.0.1:PORT] [--gzip LEVEL]   -> one "name digest" line per image
#        hack/build-images.sh verify [openmpi|mpich|intel ...]           -> runs pi in chroots of the images
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
component=build-images
# shellcheck source=lib.sh
source "$root/hack/lib.sh"

[ "$(id -u)" = 0 ] || { echo "error: building images needs root (debootstrap, chroot, mount namespaces)" >&2; exit 1; }
bash "$root/hack/install-node-packages.sh" debootstrap gcc libc6-dev util-linux iproute2

# The project's venv has pip (for the Intel MPI wheels); the package itself needs only the standard library.
py="$root/.venv/bin/python"
[ -x "$py" ] || py=python3
command=build
if [ "${1:-}" = verify ]; then command=verify; shift; fi
cd "$root"
PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}" exec "$py" -m mpioperator.testing.images "$command" "$@"
