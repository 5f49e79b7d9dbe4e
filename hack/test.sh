#!/usr/bin/env bash
# The test command: sets everything up on a fresh machine, then runs lint, type checks and every test tier
# (unit, integration on a real kube-apiserver, e2e on the full local cluster with kwok nodes, real: MPI
# programs on a real node).
# Extra arguments go to pytest, e.g. `hack/test.sh -m unit` or `hack/test.sh -k hostfile`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
component=test
# shellcheck source=lib.sh
source "$root/hack/lib.sh"
cd "$root"
started=$SECONDS

# A run that ends early stops what it started in the background: the image and tool builds (a finished build's
# directory goes too) and the e2e tier's pytest, interrupted so that it tears its clusters down.
images_pid="" tools_pid="" e2e_pid="" e2e_out="" real_b_pid=""
cleanup() {
  if [ -n "$images_pid" ]; then
    if [ ! -s "$MPIOPERATOR_IMAGES_BUILD/status" ]; then kill -- -"$images_pid" 2>/dev/null || true; fi
    rm -rf "$MPIOPERATOR_IMAGES_BUILD"
  fi
  if [ -n "$tools_pid" ]; then
    if [ ! -s "$MPIOPERATOR_TOOLS_BUILD/status" ]; then kill -- -"$tools_pid" 2>/dev/null || true; fi
    rm -rf "$MPIOPERATOR_TOOLS_BUILD"
  fi
  if [ -n "$e2e_pid" ] && kill -INT "$e2e_pid" 2>/dev/null; then
    wait "$e2e_pid" 2>/dev/null || true
  fi
  if [ -n "$e2e_out" ]; then rm -f "$e2e_out"; fi
  if [ -n "$real_b_pid" ] && kill -INT "$real_b_pid" 2>/dev/null; then
    wait "$real_b_pid" 2>/dev/null || true
  fi
}
trap cleanup EXIT

bash hack/setup.sh --no-control-plane

echo "== ruff"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
echo "== mypy"
.venv/bin/mypy
echo "== import contracts"; .venv/bin/lint-imports

# Under CI every tier must run and pass: a test that would skip or is expected to fail fails the run
# instead, and each tier must reach its floor of tests (test/tier_report.py).
ci_args=()
if under_ci; then ci_args=(--require-all-tiers); fi

# The tools beside the control plane (Helm, Prometheus, the gang schedulers, Kueue) build in the background
# from here: cold, they are twenty-odd minutes of compiling on 2 cores, which the first tiers overlap. Each
# test that drives one waits for it before it starts, outside its timeout (test/built_tools.py).
MPIOPERATOR_TOOLS_BUILD=$(mktemp -d "${TMPDIR:-/tmp}/mpioperator-tools.XXXXXX")
export MPIOPERATOR_TOOLS_BUILD
setsid bash hack/build-tools.sh "$MPIOPERATOR_TOOLS_BUILD" >/dev/null 2>&1 &
tools_pid=$!
echo "tools: building in the background (log: $MPIOPERATOR_TOOLS_BUILD/log)"

# The real node (kubelet, CoreDNS, containerd from Debian) and its images, when this machine can run one
# (root on Linux); elsewhere the real-tier tests say why they did not run.
real_node=""
if [ "$(id -u)" = 0 ]; then real_node=1; fi
if [ -n "$real_node" ]; then
  # The images build (minutes when cold) while the control plane, the real node and the registry are
  # made and the first tiers run: a cold image build waits mostly on downloads, a cold Go build on the
  # CPU. The tests that need images wait for its status file (mpioperator/testing/background.py)
  # and fail with its log's tail if it failed.
  MPIOPERATOR_IMAGES_BUILD=$(mktemp -d "${TMPDIR:-/tmp}/mpioperator-images.XXXXXX")
  export MPIOPERATOR_IMAGES_BUILD
  setsid bash -c 'bash hack/build-images.sh >"$1/out" 2>"$1/log"; echo $? >"$1/status"' _ "$MPIOPERATOR_IMAGES_BUILD" &
  images_pid=$!
  echo "images: building in the background (log: $MPIOPERATOR_IMAGES_BUILD/log)"
fi

# The control plane before the real node: every tier but the unit tier needs it, and so does the image
# build (the exec agent's image, built last, carries its kubectl), which otherwise waits for it.
echo "== control plane"
bin_dir=$(bash hack/build-control-plane.sh)
echo "binaries: $bin_dir"

if [ -n "$real_node" ]; then
  MPIOPERATOR_NODE_BIN=$(bash hack/setup-node.sh)
  export MPIOPERATOR_NODE_BIN
  echo "real node: $MPIOPERATOR_NODE_BIN"
  REGISTRY_BIN=$(bash hack/build-registry.sh)
  export REGISTRY_BIN
elif [ ${#ci_args[@]} -gt 0 ]; then
  echo "real node: NOT SET UP (needs root); CI requires every tier to run, so the tests that need root (the real tier, the image builds) fail and so will this run"
else
  echo "real node: not set up (needs root); the real-tier tests will be skipped, each with the reason"
fi

echo "== pytest"
export KUBEBUILDER_ASSETS="$bin_dir"
if [ $# -gt 0 ]; then
  .venv/bin/pytest "${ci_args[@]}" "$@"
  echo "== all checks passed in $((SECONDS - started))s"
  exit 0
fi

# The whole suite in two pytest processes side by side, since both mostly wait on clusters and pods rather
# than on the CPU: the e2e and integration tiers in one; in the other the unit tier, then the real tier
# (the longest) once the images are built. Every test lives in one of the four tier directories
# (test/unit/test_tiers.py). The first run's output is kept in a file and shown once the other has ended,
# so neither interleaves with the other; each ends with its own account per tier, and a failure of
# either fails the command.
e2e_out=$(mktemp "${TMPDIR:-/tmp}/mpioperator-e2e.XXXXXX")
# `trap - INT`: bash starts background commands with SIGINT ignored, and pytest must get it to tear down.
# The integration tier first: most of it needs only the control plane, so it runs while the tools build.
(trap - INT; exec .venv/bin/pytest "${ci_args[@]}" --durations=15 test/integration test/e2e >"$e2e_out" 2>&1) &
e2e_pid=$!
# Ctrl-C reaches both runs, which tear down; the script then goes on to show both and fail.
interrupted=""
trap 'interrupted=1' INT
echo "e2e and integration tiers: running beside the unit and real tiers, their output follows"
others=0
.venv/bin/pytest "${ci_args[@]}" --durations=15 test/unit || others=$?
# The real tier starts once the background image build has ended, so that a cold build (a quarter of an
# hour on 2 cores) is not waited for inside the first real test, against its timeout.
if [ -n "$images_pid" ] && [ -z "$interrupted" ] && [ ! -s "$MPIOPERATOR_IMAGES_BUILD/status" ]; then
  echo "== waiting for the image build before the real tier (log: $MPIOPERATOR_IMAGES_BUILD/log)"
  waited=$SECONDS
  while [ -z "$interrupted" ] && [ ! -s "$MPIOPERATOR_IMAGES_BUILD/status" ] && kill -0 "$images_pid" 2>/dev/null; do
    sleep 5
  done
  echo "image build ended after $((SECONDS - waited))s more"
fi
if [ -z "$interrupted" ]; then
  # The real tier in two lanes side by side, as its tests mostly wait on pods and MPI rather than on the
  # CPU: the two-node fault and gang tests, PyTorch and DeepSpeed (the largest images), the reachability
  # tests (minutes of waiting on late or lost hosts), the failed-rank and stalled-job tests in lane B, on a
  # bridge and subnets of their own so that neither lane waits for the other's node; everything else in
  # lane A, whose run of the tier directory keeps the tier's floor check. On a cold machine lane A is the
  # last thing to end: it had 36 minutes and lane B 15 before the reachability tests (7) moved to B.
  real_b_out=$(mktemp "${TMPDIR:-/tmp}/mpioperator-real-b.XXXXXX")
  lane_b=(test/real/test_real_nodes.py test/real/test_real_gang.py test/real/test_real_pytorch.py
    test/real/test_real_reachability.py test/real/test_real_failed_rank.py test/real/test_real_stalled.py)
  (trap - INT; export MPIOPERATOR_NODE_BRIDGE=mpiop1 MPIOPERATOR_NODE_SUBNET=10.78.0.0/16
    exec .venv/bin/pytest "${ci_args[@]}" --durations=10 "${lane_b[@]}" >"$real_b_out" 2>&1) &
  real_b_pid=$!
  .venv/bin/pytest "${ci_args[@]}" --durations=15 test/real "${lane_b[@]/#/--ignore=}" || others=$?
  wait "$real_b_pid" || others=$?
  real_b_pid=""
  echo "== pytest: the real tier's lane B (${lane_b[*]}), run beside lane A"
  cat "$real_b_out"
  rm -f "$real_b_out"
fi
e2e=0
wait "$e2e_pid" || e2e=$?
e2e_pid=""
echo "== pytest: the e2e and integration tiers, run beside the unit and real tiers"
cat "$e2e_out"
if [ "$others" != 0 ] || [ "$e2e" != 0 ]; then
  echo "== FAILED: the unit and real tiers' pytest runs exited $others, the e2e and integration tiers' $e2e (after $((SECONDS - started))s)"
  exit 1
fi
echo "== all checks passed in $((SECONDS - started))s"
