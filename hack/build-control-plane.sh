#!/usr/bin/env bash
# Builds (or finds) the real control-plane binaries and prints the directory that holds them.
# Output dir is keyed by component version and Go version, so a cache hit skips the build entirely.
# Usage: hack/build-control-plane.sh            -> prints the bin dir on stdout, progress on stderr
set -euo pipefail
component=control-plane
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"

have_all() { local d=$1; for b in etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok; do [ -x "$d/$b" ] || return 1; done; }

# envtest's convention: a directory that already holds the binaries wins over building (and needs no Go).
if [ -n "${KUBEBUILDER_ASSETS:-}" ] && have_all "$KUBEBUILDER_ASSETS"; then
  echo "$KUBEBUILDER_ASSETS"; exit 0
fi

require_go
out="$cache_root/bin/k8s-${K8S_VERSION}_kwok-${KWOK_VERSION}_etcd-${ETCD_VERSION}_go${go_ver}"
reuse_or_lock control-plane "$out" \
  "$out"/{etcd,kube-apiserver,kube-controller-manager,kube-scheduler,kubectl,kwok}

build_kubernetes() {
  k8s_wrapper_module "$cache_root/wrappers/k8s-$K8S_VERSION" kube-apiserver kube-controller-manager kube-scheduler kubectl
  go build -trimpath -tags=selinux,notest -ldflags="$(k8s_ldflags)" -o "$out/" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl
}

# etcd's server module also carries relative replaces; its published requirements are real tags.
build_etcd() {
  wrapper_module "$cache_root/wrappers/etcd-$ETCD_VERSION" example.local/etcdbin
  go mod edit -require="go.etcd.io/etcd/server/v3@$ETCD_VERSION"
  go mod edit -tool=go.etcd.io/etcd/server/v3
  go mod tidy
  go build -trimpath -ldflags="-s -w" -o "$out/etcd" go.etcd.io/etcd/server/v3
}

build_kwok() {
  go_install "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=$KWOK_VERSION" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
}

log "cold build into $out (k8s $K8S_VERSION, etcd $ETCD_VERSION, kwok $KWOK_VERSION, go$go_ver); about 10 min on 2 cores"
[ -x "$out/kube-apiserver" ] && [ -x "$out/kubectl" ] || run_step kubernetes "$out" build_kubernetes
[ -x "$out/etcd" ] || run_step etcd "$out" build_etcd
[ -x "$out/kwok" ] || run_step kwok "$out" build_kwok
"$out/kube-apiserver" --version >&2
first_line "$out/etcd" --version
"$out/kwok" --version >&2 || true
build_done "$out"
