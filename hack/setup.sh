#!/usr/bin/env bash
# Sets up a fresh machine for development: a Python venv with the project and its test tools (.venv),
# and the real control-plane binaries (built once from Go modules, cached by version outside git).
# Usage: hack/setup.sh [--no-control-plane]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
component=setup
# shellcheck source=lib.sh
source "$root/hack/lib.sh"
cd "$root"
py=${PYTHON:-python3}

command -v "$py" >/dev/null 2>&1 || die "Python 3.11+ is required: apt-get install python3 python3-venv"
"$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
  || die "Python 3.11+ is required, found $("$py" --version 2>&1): install a newer python3"

if [ ! -x .venv/bin/python ]; then
  echo "[setup] creating .venv" >&2
  if ! "$py" -m venv .venv 2>/dev/null; then
    rm -rf .venv
    if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
      apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null
      "$py" -m venv .venv
    else
      die "python3 cannot create a venv: apt-get install python3-venv"
    fi
  fi
fi

# Reinstall only when the package metadata changed; a warm run skips pip entirely.
stamp=.venv/.installed-$(cat setup.cfg pyproject.toml | sha256sum | cut -c1-16)
if [ ! -f "$stamp" ]; then
  echo "[setup] installing mpioperator and its test tools into .venv" >&2
  log=.venv/pip-install.log
  if ! { .venv/bin/python -m pip install -q --upgrade pip && .venv/bin/python -m pip install -q -e '.[test,auth-provider]'; } >"$log" 2>&1; then
    cat "$log" >&2
    die "pip install failed (log above, also in $log)"
  fi
  rm -f .venv/.installed-*
  touch "$stamp"
fi

if [ "${1:-}" != "--no-control-plane" ]; then
  bash hack/build-control-plane.sh >/dev/null
fi
