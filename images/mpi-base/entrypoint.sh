#!/bin/sh
# Entry point of the mpi-pi images: loads the MPI environment; hands the container's environment to the
# sshd that starts ranks; in a launcher (K_MPI_JOB_ROLE=launcher, set by the operator) waits until its own
# name resolves through DNS and every host of /etc/mpi/hostfile resolves, since Hydra (MPICH, Intel MPI)
# gives up at once on a name that does not resolve yet. Then runs the command.
if [ -r /etc/profile.d/mpi.sh ]; then
  . /etc/profile.d/mpi.sh
fi

# sshd starts ranks with a fresh environment, so what the pod template sets (NCCL_DEBUG, ...) would never
# reach them. One sshd_config SetEnv line of this container's environment, which the image's sshd configs
# Include: the system sshd's (run as root) from /etc/ssh/sshd_config.d, mpiuser's ~/.sshd_config from
# ~/.sshd_environment. What mpirun sets for a rank (OMPI_*, PMIX_*, -x) is set later, by the MPI daemon,
# so it still wins. Left out: what sshd sets for the login itself, and values sshd_config cannot hold.
sshd_environment() {
  awk 'BEGIN {
    skip = "^(HOME|USER|LOGNAME|SHELL|MAIL|PWD|OLDPWD|SHLVL|TERM|_|SSH_[A-Za-z_0-9]*)$"
    line = ""
    for (name in ENVIRON) {
      value = ENVIRON[name]
      if (name !~ /^[A-Za-z_][A-Za-z_0-9]*$/ || name ~ skip || value ~ /\n/) continue
      quoted = ""
      for (i = 1; i <= length(value); i++) {
        c = substr(value, i, 1)
        quoted = quoted (c == "\\" || c == "\"" ? "\\" : "") c
      }
      line = line " \"" name "=" quoted "\""
    }
    if (line != "") print "SetEnv" line
  }'
}
if [ "$(id -u)" = 0 ]; then
  environment_conf=/etc/ssh/sshd_config.d/environment.conf
else
  environment_conf="${HOME:-/nonexistent}/.sshd_environment"
fi
if [ -d "$(dirname "$environment_conf")" ]; then
  sshd_environment >"$environment_conf" 2>/dev/null \
    || echo "entrypoint: cannot write $environment_conf; ranks started over ssh get sshd's environment" >&2
fi

# The launcher's own name through DNS only: the kubelet writes the pod's names into its /etc/hosts, so a
# plain lookup here answers at once, while the workers (whose Hydra proxies call the launcher back by this
# name) must wait for the Service's record. The full name, as /etc/hosts gives it: the launcher's resolv.conf
# lacks the job's search domain the workers have.
own_name_in_dns() {
  own=$(hostname)
  full=$(getent hosts "$own" | awk '{ print $2; exit }')
  getent -s dns hosts "${full:-$own}" >/dev/null
}

resolves_all() {
  own_name_in_dns || return 1
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
