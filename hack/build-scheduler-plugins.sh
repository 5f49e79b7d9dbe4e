#!/usr/bin/env bash
# Builds (or finds) the scheduler-plugins scheduler (kube-scheduler + Coscheduling and friends).
# Usage: hack/build-scheduler-plugins.sh        -> prints the scheduler binary path on stdout, progress on stderr
#        hack/build-scheduler-plugins.sh crd    -> prints the path of the PodGroup CRD inside the Go module cache
# The output dir is keyed by scheduler-plugins version and Go version, so a cache hit skips the build entirely.
set -euo pipefail
component=scheduler-plugins
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"
module=sigs.k8s.io/scheduler-plugins

require_go

# Downloads the module if needed (a no-op on a warm module cache) and prints one field of its metadata.
module_field() {
  go mod download -json "$module@$SCHEDULER_PLUGINS_VERSION" \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"
}

if [ "${1:-}" = crd ]; then
  crd="$(module_field Dir)/config/crd/bases/scheduling.x-k8s.io_podgroups.yaml"
  [ -f "$crd" ] || die "PodGroup CRD not found at $crd"
  echo "$crd"
  exit 0
fi

out="$cache_root/bin/scheduler-plugins-${SCHEDULER_PLUGINS_VERSION}_go${go_ver}"
bin="$out/scheduler-plugins-scheduler"
reuse_or_lock scheduler-plugins "$bin" "$bin"

# The module's go.mod pins k8s.io staging modules with replace directives, which `go install mod@v`
# refuses; a throw-away main module carries the same replaces and builds cmd/scheduler from there.
build_scheduler() {
  wrapper_module "$cache_root/wrappers/scheduler-plugins-$SCHEDULER_PLUGINS_VERSION" example.local/schedulerplugins
  local gomod; gomod=$(module_field GoMod)
  # A plain assignment (not `for r in $(...)`) so that a failure here stops the build under `set -e`;
  # an empty list would silently resolve the k8s staging modules to @latest and fail much later.
  local replaces
  replaces=$(go mod edit -json "$gomod" | python3 "$here/scheduler_plugins_replaces.py")
  [ -n "$replaces" ] || die "no replace directives found in $gomod"
  # shellcheck disable=SC2086  # one -replace=old=new@v word per line, no spaces inside
  go mod edit $replaces
  go mod edit -require="$module@$SCHEDULER_PLUGINS_VERSION"
  go mod edit -tool="$module/cmd/scheduler"
  go mod tidy
  # The version stamp must be the Kubernetes release the scheduler is compiled against: kube-scheduler
  # derives its emulation version from it, and upstream's Makefile stamp (the plugins release, v0.34.7)
  # makes it refuse to start with "emulation version 0.34 is not between [1.31, 0.34.0]".
  local k8s_version
  k8s_version=$(go list -m -f '{{if .Replace}}{{.Replace.Version}}{{else}}{{.Version}}{{end}}' k8s.io/kubernetes)
  local minor=${k8s_version#v1.}; minor=${minor%%.*}
  local ldflags="-s -w" p
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $p.gitVersion=$k8s_version -X $p.gitMajor=1 -X $p.gitMinor=$minor"
  done
  go build -trimpath -ldflags="$ldflags" -o "$bin" "$module/cmd/scheduler"
}

log "cold build of $module $SCHEDULER_PLUGINS_VERSION (go$go_ver) into $out; several minutes on 2 cores"
run_step scheduler "$out" build_scheduler
"$bin" --version >&2 || true
build_done "$bin"
