#!/bin/sh
# The exec launch agent: what the launcher's MPI runs instead of ssh (Open MPI's plm_rsh_agent, Hydra's rsh
# bootstrap), as `kubexec.sh [ssh options] HOST COMMAND...`. HOST is a hostfile name,
# `<job>-worker-N.<job>.<namespace>.svc[.<domain>]`, whose first label is the worker pod's name; COMMAND
# runs there through the API server's exec (kubectl beside this script, with the launcher's ServiceAccount
# token), with stdin, stdout and stderr streamed and its exit code passed back, as ssh would.

# ssh options the MPIs pass (upstream's `-o ConnectionAttempts=10`) mean nothing here.
while [ $# -gt 0 ]; do
  case "$1" in
    -[BbcDEeFIiJLlmOopQRSWw]) shift 2 ;;
    -*) shift ;;
    *) break ;;
  esac
done
if [ $# -lt 2 ]; then
  echo "usage: $0 [ssh options] HOST COMMAND..." >&2
  exit 255
fi
host=$1
shift
pod=${host%%.*}
# The launcher itself, when it also runs ranks (runLauncherAsWorker): no exec needed.
if [ "$pod" = "${HOSTNAME:-}" ]; then
  exec /bin/sh -c "$*"
fi
read -r namespace < /var/run/secrets/kubernetes.io/serviceaccount/namespace
exec "${0%/*}/kubectl" exec -i --namespace "$namespace" -c "${MPIOPERATOR_EXEC_CONTAINER:?}" "$pod" \
  -- /bin/sh -c "$*"
