# mpioperator/mpich: MPICH from PyPI's `mpich` wheel (not Debian's 4.0 ch4:ucx, whose MPI_Finalize can
# hang: fixed in 4.2) under /opt/mpich, with sshd set up as in openmpi.Dockerfile. The wheel bundles UCX,
# libfabric, hwloc and Hydra. Ranks started over ssh get sshd's fresh environment, so sshd sets PATH.
# Build: docker build -f images/mpi-base/mpich.Dockerfile -t mpioperator/mpich images/mpi-base
ARG MPICH_VERSION=4.3.2

FROM debian:bookworm AS wheel
ARG MPICH_VERSION
# A wheel cannot hold symlinks: libmpi.so, .so.12 and .so.12.x are copies until hardlink joins them.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3-venv \
 && python3 -m venv /opt/pip \
 && /opt/pip/bin/pip install --no-cache-dir --disable-pip-version-check --no-deps --only-binary=:all: \
      --prefix=/opt/mpich "mpich==${MPICH_VERSION}" \
 && rm -rf /opt/mpich/lib/python3* \
 && hardlink --ignore-time /opt/mpich

FROM debian:bookworm
COPY --from=wheel /opt/mpich /opt/mpich
ENV PATH=/opt/mpich/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
RUN apt-get update \
 && apt-get install -y --no-install-recommends openssh-server openssh-client \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/* /var/log/apt/* /var/log/dpkg.log /var/log/alternatives.log \
 && rm -f /etc/ssh/ssh_host_* \
 && echo /opt/mpich/lib > /etc/ld.so.conf.d/mpich.conf && ldconfig \
 && printf '%s\n' "export PATH='$PATH'" > /etc/profile.d/mpi.sh \
 && mkdir -p /run/sshd && chmod 0755 /run/sshd \
 && useradd --create-home --uid 1000 --user-group --shell /bin/bash mpiuser \
 && install -d -m 0700 -o mpiuser -g mpiuser /home/mpiuser/.ssh \
 && printf '%s\n' 'Include /home/mpiuser/.sshd_environment' 'PidFile /home/mpiuser/sshd.pid' 'HostKey /home/mpiuser/.ssh/id_rsa' 'StrictModes no' 'Port 2222' \
      "SetEnv PATH=$PATH" > /home/mpiuser/.sshd_config \
 && chown mpiuser:mpiuser /home/mpiuser/.sshd_config
COPY ssh_config /etc/ssh/ssh_config.d/mpi.conf
COPY sshd_config /etc/ssh/sshd_config.d/mpi.conf
COPY entrypoint.sh /entrypoint.sh
WORKDIR /home/mpiuser
EXPOSE 2222
ENTRYPOINT ["/entrypoint.sh"]
CMD ["/bin/bash"]
