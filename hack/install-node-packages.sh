#!/usr/bin/env bash
# Installs the Debian packages given on the command line when they are missing (as root, with apt-get);
# otherwise fails with one line naming what to install.
# Usage: hack/install-node-packages.sh PACKAGE...
set -euo pipefail
component=install-node-packages
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

find_missing() {
  missing=()
  for package in "$@"; do
    status=$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null || true)
    [ "$status" = "install ok installed" ] || missing+=("$package")
  done
}
find_missing "$@"
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  die "missing Debian packages: apt-get install ${missing[*]} (as root)"
fi
# The image build and the real node's set-up run side by side in the test command, and apt-get fails
# at once rather than wait when another holds dpkg's lock: one install at a time, then look again.
build_lock apt
find_missing "$@"
[ ${#missing[@]} -eq 0 ] && exit 0
printf '[packages] installing %s\n' "${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
log=$(mktemp)
if ! { apt-get update -q && apt-get install -y -q --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
  tail -20 "$log" >&2
  rm -f "$log"
  die "apt-get install ${missing[*]} failed (output above)"
fi
rm -f "$log"
