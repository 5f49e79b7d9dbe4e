"""Horovod's host discovery for an MPIJob: the hosts of the operator's /etc/mpi/discover_hosts.sh that answer
on the workers' ssh port now.

The launcher's discover_hosts.sh is a ConfigMap file, which the kubelet refreshes only at its next sync of
the launcher pod (about a minute): a worker scaled away stays listed that long, and Horovod, once the
worker's blacklisting cools down, starts a rank on a host that no longer exists; the other ranks then wait
for it in their rendezvous until Gloo gives up and the whole job fails. Listing only the hosts that resolve
and accept a connection now keeps a host out until it can take a rank.

Usage: horovodrun --host-discovery-script /examples/discover_reachable_hosts.py ...
"""

import socket
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

SCRIPT = "/etc/mpi/discover_hosts.sh"
PORT = 2222
TIMEOUT = 1.0


def reachable(line: str) -> bool:
    host = line.split(":")[0]
    try:
        with socket.create_connection((host, PORT), timeout=TIMEOUT):
            return True
    except OSError:
        return False


def main() -> int:
    listed = subprocess.run([SCRIPT], capture_output=True, text=True, check=True).stdout.split()
    with ThreadPoolExecutor(max_workers=max(1, len(listed))) as pool:
        answers = list(pool.map(reachable, listed))
    for line, answered in zip(listed, answers, strict=True):
        if answered:
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
