#!/bin/sh
# Entry point of the mpi-pi images: loads the MPI environment, and in a launcher (K_MPI_JOB_ROLE=launcher,
# set by the operator) waits until its own name and every host of /etc/mpi/hostfile resolve, since
# Hydra (MPICH, Intel MPI) gives up at once on a name that does not resolve yet. Then runs the command.
if [ -r /etc/profile.d/mpi.sh ]; then
  . /etc/profile.d/mpi.sh
fi

resolves_all() {
  getent hosts "$(hostname)" >/dev/null || return 1
  [ -r /etc/mpi/hostfile ] || return 0
  while read -r host _; do
    host=${host%%:*}
    [ -z "$host" ] || getent hosts "$host" >/dev/null || return 1
  done </etc/mpi/hostfile
}

if [ "$K_MPI_JOB_ROLE" = launcher ]; then
  delay=0.1
  for _ in 1 2 3 4 5 6 7 8 9 10 11; do
    resolves_all && break
    sleep "$delay"
    delay=$(awk "BEGIN { print $delay * 2 }")
  done
  resolves_all || echo "entrypoint: some hosts of /etc/mpi/hostfile still do not resolve; starting anyway" >&2
fi

exec "$@"
