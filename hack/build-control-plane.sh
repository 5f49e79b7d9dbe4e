#!/usr/bin/env bash
# Builds (or finds) the real control-plane binaries and prints the directory that holds them.
# Output dir is keyed by component version and Go version, so a cache hit skips the build entirely.
# Usage: hack/build-control-plane.sh            -> prints the bin dir on stdout, progress on stderr
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.env
source "$here/versions.env"

log() { printf '[control-plane %4ss] %s\n' "$SECONDS" "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

command -v go >/dev/null 2>&1 || die "Go ${GO_MIN_VERSION}+ is required to build the control plane: install it from https://go.dev/dl (or apt-get install golang-${GO_MIN_VERSION}-go)."
go_ver=$(go env GOVERSION | sed 's/^go//')
python3 - "$go_ver" "$GO_MIN_VERSION" <<'PY' || die "Go ${GO_MIN_VERSION}+ is required, found go${go_ver}: install a newer Go from https://go.dev/dl."
import sys
have = [int(x) for x in sys.argv[1].split(".")[:2]]
need = [int(x) for x in sys.argv[2].split(".")[:2]]
sys.exit(0 if have >= need else 1)
PY

cache_root=${MPIOPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mpioperator}
out="$cache_root/bin/k8s-${K8S_VERSION}_kwok-${KWOK_VERSION}_etcd-${ETCD_VERSION}_go${go_ver}"
stamp="$out/.complete"
if [ -f "$stamp" ]; then
  echo "$out"
  exit 0
fi

export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=mod
mkdir -p "$out" "$cache_root/wrappers"

# Periodic progress so a 20-minute cold build never looks hung.
progress() { while sleep 60; do log "still building $1 ..."; done; }
run_step() {
  local what=$1; shift
  log "building $what"
  progress "$what" >/dev/null & local ticker=$!  # off stdout: $(...) callers would wait for its sleep
  if ! "$@" >"$out/build-$what.log" 2>&1; then
    kill "$ticker" 2>/dev/null || true
    tail -30 "$out/build-$what.log" >&2
    die "building $what failed (full log: $out/build-$what.log)"
  fi
  kill "$ticker" 2>/dev/null || true
  log "built $what"
}

# k8s.io/kubernetes cannot be `go install`ed: its go.mod maps staging modules to ./staging.
# A throw-away main module re-maps each of them to its published v0.Y.Z tag.
build_kubernetes() {
  local wrap="$cache_root/wrappers/k8s-$K8S_VERSION" staging="v0.${K8S_VERSION#v1.}"
  local minor; minor=$(echo "$K8S_VERSION" | cut -d. -f2)
  rm -rf "$wrap"; mkdir -p "$wrap"; cd "$wrap"
  go mod init example.local/k8sbins
  go mod edit -go=1.26.0
  local gomod; gomod=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])')
  local m
  for m in $(go mod edit -json "$gomod" | python3 -c '
import json, sys
for r in json.load(sys.stdin).get("Replace") or []:
    if not r["New"].get("Version") and r["New"]["Path"].startswith("./staging/"):
        print(r["Old"]["Path"])'); do
    go mod edit -replace="$m=$m@$staging"
  done
  go mod edit -require="k8s.io/kubernetes@$K8S_VERSION"
  local c
  for c in kube-apiserver kube-controller-manager kube-scheduler kubectl; do go mod edit -tool="k8s.io/kubernetes/cmd/$c"; done
  go mod tidy
  local ldf="-s -w" p date; date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldf+=" -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean -X $p.buildDate=$date"
  done
  go build -trimpath -tags=selinux,notest -ldflags="$ldf" -o "$out/" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl
}

# etcd's server module also carries relative replaces; its published requirements are real tags.
build_etcd() {
  local wrap="$cache_root/wrappers/etcd-$ETCD_VERSION"
  rm -rf "$wrap"; mkdir -p "$wrap"; cd "$wrap"
  go mod init example.local/etcdbin
  go mod edit -go=1.26.0
  go mod edit -require="go.etcd.io/etcd/server/v3@$ETCD_VERSION"
  go mod edit -tool=go.etcd.io/etcd/server/v3
  go mod tidy
  go build -trimpath -ldflags="-s -w" -o "$out/etcd" go.etcd.io/etcd/server/v3
}

build_kwok() {
  GOBIN="$out" go install -trimpath -ldflags="-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=$KWOK_VERSION" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
}

have_all() { local d=$1; for b in etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok; do [ -x "$d/$b" ] || return 1; done; }

# envtest's convention: a directory that already holds the binaries wins over building.
if [ -n "${KUBEBUILDER_ASSETS:-}" ] && have_all "$KUBEBUILDER_ASSETS"; then
  echo "$KUBEBUILDER_ASSETS"; exit 0
fi

log "cold build into $out (k8s $K8S_VERSION, etcd $ETCD_VERSION, kwok $KWOK_VERSION, go$go_ver); about 10 min on 2 cores"
[ -x "$out/kube-apiserver" ] && [ -x "$out/kubectl" ] || run_step kubernetes build_kubernetes
[ -x "$out/etcd" ] || run_step etcd build_etcd
[ -x "$out/kwok" ] || run_step kwok build_kwok
"$out/kube-apiserver" --version >&2
"$out/etcd" --version | head -1 >&2
"$out/kwok" --version >&2 || true
touch "$stamp"
log "done"
echo "$out"
