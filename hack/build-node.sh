#!/usr/bin/env bash
# Builds (or finds) the binaries of a real node: the kubelet (same Kubernetes release as the control plane)
# and CoreDNS (cluster DNS). Prints the directory that holds them; progress goes to stderr.
# The directory is keyed by both versions and the Go version, so a cache hit skips the build entirely.
# Usage: hack/build-node.sh
set -euo pipefail
component=node
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"

have_all() { [ -x "$1/kubelet" ] && [ -x "$1/coredns" ]; }
# A directory that already holds both (a developer's own build) wins, as KUBEBUILDER_ASSETS does for the
# control plane.
if [ -n "${MPIOPERATOR_NODE_BIN:-}" ] && have_all "$MPIOPERATOR_NODE_BIN"; then
  echo "$MPIOPERATOR_NODE_BIN"; exit 0
fi

require_go
out="$cache_root/bin/node-k8s-${K8S_VERSION}_coredns-${COREDNS_VERSION}_go${go_ver}"
reuse_or_lock node "$out" "$out/kubelet" "$out/coredns"

build_kubelet() {
  k8s_wrapper_module "$cache_root/wrappers/k8s-node-$K8S_VERSION" kubelet
  go build -trimpath -tags=selinux,notest -ldflags="$(k8s_ldflags)" -o "$out/" k8s.io/kubernetes/cmd/kubelet
}

# CoreDNS's own main package imports every plugin, cloud SDKs included. This main package imports only
# the plugins a test cluster's Corefile uses; each registers itself when imported.
build_coredns() {
  wrapper_module "$cache_root/wrappers/coredns-$COREDNS_VERSION" example.local/coredns
  go mod edit -require="github.com/coredns/coredns@$COREDNS_VERSION"
  cat >main.go <<'GO'
package main

import (
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
)

func main() { coremain.Run() }
GO
  go mod tidy
  go build -trimpath -ldflags="-s -w" -o "$out/coredns" .
}

log "cold build into $out (kubelet $K8S_VERSION, CoreDNS $COREDNS_VERSION, go$go_ver); 2-6 min on 2 cores"
[ -x "$out/coredns" ] || run_step coredns "$out" build_coredns
[ -x "$out/kubelet" ] || run_step kubelet "$out" build_kubelet
"$out/kubelet" --version >&2
first_line "$out/coredns" -version
build_done "$out"
