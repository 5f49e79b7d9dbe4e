#!/usr/bin/env bash
# Prepares this machine for the real-node tier: the Debian packages a node needs (containerd, runc, CNI
# plugins, iptables, iproute2; debootstrap and gcc to build the images), installed when missing, and the
# kubelet and CoreDNS binaries (built once from Go modules, cached by version). Prints the binaries' dir.
# Needs root for apt; without root it says what is missing and fails.
set -euo pipefail
component=setup-node
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"

# command -> package; a command already on PATH means its package is there (or an equivalent install).
declare -A wanted=(
  [containerd]=containerd [runc]=runc [iptables]=iptables [ip]=iproute2
  [debootstrap]=debootstrap [gcc]=gcc [flock]=util-linux
)
missing=()
for cmd in "${!wanted[@]}"; do
  command -v "$cmd" >/dev/null 2>&1 || missing+=("${wanted[$cmd]}")
done
[ -x /usr/lib/cni/bridge ] && [ -x /usr/lib/cni/host-local ] || missing+=(containernetworking-plugins)
if [ "${#missing[@]}" -gt 0 ]; then
  [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
    || die "the real node needs: apt-get install ${missing[*]} (as root)"
  log "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # Debian's containerd package would start a system containerd; the node runs its own, so nothing starts.
  apt_log=$(mktemp)
  if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"$apt_log" 2>&1; then
    tail -20 "$apt_log" >&2
    die "apt-get install ${missing[*]} failed"
  fi
  rm -f "$apt_log"
fi
exec bash "$here/build-node.sh"
