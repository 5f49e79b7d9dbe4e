# Helpers shared by the hack/ build scripts. Source it after setting `component` (the log prefix):
#   component=kubelet; source "$(dirname "$0")/lib.sh"
# It sources versions.env, sets cache_root and go_ver, and exports the Go settings every build uses.
# shellcheck shell=bash
# shellcheck source=versions.env
source "$(dirname "${BASH_SOURCE[0]}")/versions.env"

log() { printf '[%s %4ss] %s\n' "$component" "${SECONDS}" "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# Every script that sources this file names the step that failed, so nobody is left with a bare exit code
# (errexit alone ends a script silently). errtrace hands the trap to functions; a subshell's failure is
# reported by the line in the script that ran it, so each failure is told once per script. Steps with a
# log of their own (run_step) say where it is themselves.
on_error() {
  local status=$1 line=$2 command=$3
  [ "${BASH_SUBSHELL}" = 0 ] || return "$status"
  local where="${BASH_SOURCE[1]:-$0}" callers="" i
  # A failure inside a function also names the lines that called it, up to the script.
  for ((i = 1; i < ${#FUNCNAME[@]} - 1; i++)); do
    callers+=" <- ${FUNCNAME[i]} called at ${BASH_SOURCE[i + 1]#"$PWD"/}:${BASH_LINENO[i]}"
  done
  printf 'error: [%s] failed (exit %s) at %s:%s: %s%s\n' "$component" "$status" "${where#"$PWD"/}" "$line" "$command" "$callers" >&2
  printf 'error: [%s] its output, and the log of any build step it ran, are above this line\n' "$component" >&2
  exit "$status"
}
err_trap='on_error $? $LINENO "$BASH_COMMAND"'
set -o errtrace
trap "$err_trap" ERR

# first_line COMMAND...: prints the first line of COMMAND's output to stderr. The whole output is read
# before it is cut: piping COMMAND into head under pipefail fails whenever COMMAND writes its second line after
# head has closed the pipe (SIGPIPE, exit 141), which depends on scheduling.
first_line() {
  local text
  text=$("$@" 2>&1)
  printf '%s\n' "${text%%$'\n'*}" >&2
}

# under_ci: whether this run is a CI run, read as test/tier_report.py reads it: CI set to anything but the
# empty string, false or 0 (in any case). Services set true, 1, yes or their own name.
under_ci() {
  local value=${CI:-}
  case "${value,,}" in "" | false | 0) return 1 ;; esac
}

cache_root=${MPIOPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mpioperator}

# Fails with one line naming what to install when Go is missing or older than GO_MIN_VERSION.
require_go() {
  command -v go >/dev/null 2>&1 \
    || die "Go ${GO_MIN_VERSION}+ is required to build $component: install it from https://go.dev/dl (or apt-get install golang-${GO_MIN_VERSION}-go)."
  go_ver=$(go env GOVERSION | sed 's/^go//')
  python3 - "$go_ver" "$GO_MIN_VERSION" <<'PY' || die "Go ${GO_MIN_VERSION}+ is required to build $component, found go${go_ver}: install a newer Go from https://go.dev/dl."
import sys
have = [int(x) for x in sys.argv[1].split(".")[:2]]
need = [int(x) for x in sys.argv[2].split(".")[:2]]
sys.exit(0 if have >= need else 1)
PY
  export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=mod
}

# build_lock NAME: holds an exclusive lock until the script exits, so two processes (parallel test runs,
# a developer's shell) never build into, or delete the wrapper module of, the same directory at once.
# The second waits, then finds the cache warm: check the stamp again after taking the lock.
build_lock() {
  mkdir -p "$cache_root"
  exec 9>"$cache_root/.build-$1.lock"
  if ! flock -n 9; then
    log "waiting for another build of $1 to finish"
    flock 9
  fi
}

# A Go build goes into $out, a directory under $cache_root/bin named after the versions of what it builds and
# of Go (set by the script after require_go), and is whole once stamped $out/.complete.
# reuse_or_lock LOCK PRINTED FILE...: when $out is whole and holds each FILE as an executable, prints PRINTED
# (what the script prints on success) and exits 0; otherwise takes the build lock LOCK, looks again
# (another process may have finished the build meanwhile), and makes $out and the wrapper modules' directory.
reuse_or_lock() {
  local lock=$1 printed=$2; shift 2
  build_files=("$@")
  if build_whole; then echo "$printed"; exit 0; fi
  build_lock "$lock"
  if build_whole; then echo "$printed"; exit 0; fi
  mkdir -p "$out" "$cache_root/wrappers"
}

build_whole() {
  [ -f "$out/.complete" ] || return 1
  local file
  for file in "${build_files[@]}"; do [ -x "$file" ] || return 1; done
}

# build_done PRINTED: checks that the build left each FILE reuse_or_lock named, stamps $out whole and prints
# PRINTED, the script's answer on stdout.
build_done() {
  local file
  for file in "${build_files[@]}"; do
    [ -x "$file" ] || die "the build finished but $file is missing (its logs: $out/build-*.log)"
  done
  touch "$out/.complete"
  log "done"
  echo "$1"
}

# go_install LDFLAGS PACKAGE@VERSION...: installs released commands into $out, for modules without replace
# directives (`go install` refuses those: they need a wrapper module, below).
go_install() {
  local ldflags=$1; shift
  GOBIN="$out" go install -trimpath -ldflags="$ldflags" "$@"
}

# wrapper_module DIR NAME: makes DIR afresh as a throw-away main module NAME at the Go version we require,
# and cds into it. A wrapper requires the exact version to build, so the module proxy is never asked for
# a version list (some refuse it), and it can carry the replace directives a module's own go.mod has.
wrapper_module() {
  rm -rf "$1"; mkdir -p "$1"; cd "$1"
  go mod init "$2"
  go mod edit -go="$GO_MIN_VERSION.0"
}

# Periodic progress so a long cold build never looks hung; kept off stdout, which callers capture.
# Its sleep holds none of the caller's pipes: killing the ticker leaves the sleep to run out on its own, and
# one that held stderr would keep a caller reading it waiting for up to a minute.
progress() { while sleep 60 </dev/null >/dev/null 2>&1; do log "still building $1 ..."; done; }

# run_step WHAT LOGDIR COMMAND...: runs COMMAND in a subshell with errexit on, its output in
# LOGDIR/build-WHAT.log, whose tail is shown when it fails. The subshell must not be part of an `if`,
# `!`, `&&` or `||`: bash ignores errexit everywhere inside such a context, so a failing step would go on.
run_step() {
  local what=$1 logdir=$2; shift 2
  log "building $what"
  progress "$what" >/dev/null &
  local ticker=$! status
  # The trap is lifted while the step runs: its failure is reported below, with the log's tail.
  trap - ERR
  set +e
  ( set -e; "$@" ) >"$logdir/build-$what.log" 2>&1
  status=$?
  set -e
  trap "$err_trap" ERR
  kill "$ticker" 2>/dev/null || true
  if [ "$status" != 0 ]; then
    tail -30 "$logdir/build-$what.log" >&2
    die "building $what failed (full log: $logdir/build-$what.log)"
  fi
  log "built $what"
}

# k8s.io/kubernetes cannot be `go install`ed: its go.mod maps staging modules to ./staging. This makes a
# throw-away main module in DIR that re-maps each of them to its published v0.Y.Z tag and lists the
# given k8s.io/kubernetes/cmd/... packages as tools, then cds into it.
k8s_wrapper_module() {
  local wrap=$1; shift
  local staging="v0.${K8S_VERSION#v1.}"
  wrapper_module "$wrap" example.local/k8sbins
  local gomod; gomod=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])')
  local modules; modules=$(go mod edit -json "$gomod" | python3 -c '
import json, sys
for r in json.load(sys.stdin).get("Replace") or []:
    if not r["New"].get("Version") and r["New"]["Path"].startswith("./staging/"):
        print(r["Old"]["Path"])')
  [ -n "$modules" ] || die "no staging replace directives found in $gomod"
  local m
  for m in $modules; do go mod edit -replace="$m=$m@$staging"; done
  go mod edit -require="k8s.io/kubernetes@$K8S_VERSION"
  local c
  for c in "$@"; do go mod edit -tool="k8s.io/kubernetes/cmd/$c"; done
  go mod tidy
}

# The -ldflags that stamp the Kubernetes version into a k8s binary (kubectl and the kubelet report it,
# and version skew checks read it).
k8s_ldflags() {
  local minor; minor=$(echo "$K8S_VERSION" | cut -d. -f2)
  local ldf="-s -w" p date; date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldf+=" -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean -X $p.buildDate=$date"
  done
  printf '%s' "$ldf"
}
