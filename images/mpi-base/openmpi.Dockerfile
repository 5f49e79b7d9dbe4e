# mpioperator/openmpi: Debian's Open MPI with sshd, set up as upstream's base images are: user mpiuser
# (uid 1000); sshd on port 2222, run by mpiuser with ~/.sshd_config, whose host key is the key the
# operator mounts at ~/.ssh; /entrypoint.sh waits for the hostfile's names in a launcher and writes the
# container's environment to ~/.sshd_environment, which ~/.sshd_config includes first, so ranks started
# over ssh get the pod's variables (docs/extensions.md).
# Build: docker build -f images/mpi-base/openmpi.Dockerfile -t mpioperator/openmpi images/mpi-base
FROM debian:bookworm
RUN apt-get update \
 && apt-get install -y --no-install-recommends openssh-server openssh-client openmpi-bin \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/* /var/log/apt/* /var/log/dpkg.log /var/log/alternatives.log \
 && rm -f /etc/ssh/ssh_host_* \
 && mkdir -p /run/sshd && chmod 0755 /run/sshd \
 && useradd --create-home --uid 1000 --user-group --shell /bin/bash mpiuser \
 && install -d -m 0700 -o mpiuser -g mpiuser /home/mpiuser/.ssh \
 && printf '%s\n' 'Include /home/mpiuser/.sshd_environment' 'PidFile /home/mpiuser/sshd.pid' 'HostKey /home/mpiuser/.ssh/id_rsa' 'StrictModes no' 'Port 2222' \
      > /home/mpiuser/.sshd_config \
 && chown mpiuser:mpiuser /home/mpiuser/.sshd_config
COPY ssh_config /etc/ssh/ssh_config.d/mpi.conf
COPY sshd_config /etc/ssh/sshd_config.d/mpi.conf
COPY entrypoint.sh /entrypoint.sh
WORKDIR /home/mpiuser
EXPOSE 2222
ENTRYPOINT ["/entrypoint.sh"]
CMD ["/bin/bash"]
