# mpioperator/intel: Intel MPI from PyPI's `impi-rt` wheel under /opt/intel/mpi, Debian's libfabric as its
# transport between hosts (the wheel ships none), sshd set up as in openmpi.Dockerfile. Ranks and Hydra's
# proxies started over ssh get sshd's fresh environment, so sshd sets Intel MPI's variables.
# Build: docker build -f images/mpi-base/intel.Dockerfile -t mpioperator/intel images/mpi-base
ARG IMPI_VERSION=2021.19.0

FROM debian:bookworm AS wheel
ARG IMPI_VERSION
# A wheel cannot hold symlinks: the libraries' versioned names are copies until hardlink joins them.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3-venv \
 && python3 -m venv /opt/pip \
 && /opt/pip/bin/pip install --no-cache-dir --disable-pip-version-check --no-deps --only-binary=:all: \
      --prefix=/opt/intel/mpi "impi-rt==${IMPI_VERSION}" \
 && rm -rf /opt/intel/mpi/lib/python3* \
 && hardlink --ignore-time /opt/intel/mpi

FROM debian:bookworm
COPY --from=wheel /opt/intel/mpi /opt/intel/mpi
ENV I_MPI_ROOT=/opt/intel/mpi \
    PATH=/opt/intel/mpi/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    LD_LIBRARY_PATH=/opt/intel/mpi/lib
RUN apt-get update \
 && apt-get install -y --no-install-recommends openssh-server openssh-client libfabric1 \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/* /var/log/apt/* /var/log/dpkg.log /var/log/alternatives.log \
 && rm -f /etc/ssh/ssh_host_* \
 && echo /opt/intel/mpi/lib > /etc/ld.so.conf.d/intel-mpi.conf && ldconfig \
 && printf '%s\n' "export I_MPI_ROOT='$I_MPI_ROOT'" "export PATH='$PATH'" "export LD_LIBRARY_PATH='$LD_LIBRARY_PATH'" \
      > /etc/profile.d/mpi.sh \
 && mkdir -p /run/sshd && chmod 0755 /run/sshd \
 && useradd --create-home --uid 1000 --user-group --shell /bin/bash mpiuser \
 && install -d -m 0700 -o mpiuser -g mpiuser /home/mpiuser/.ssh \
 && printf '%s\n' 'Include /home/mpiuser/.sshd_environment' 'PidFile /home/mpiuser/sshd.pid' 'HostKey /home/mpiuser/.ssh/id_rsa' 'StrictModes no' 'Port 2222' \
      "SetEnv I_MPI_ROOT=$I_MPI_ROOT PATH=$PATH LD_LIBRARY_PATH=$LD_LIBRARY_PATH" > /home/mpiuser/.sshd_config \
 && chown mpiuser:mpiuser /home/mpiuser/.sshd_config
COPY ssh_config /etc/ssh/ssh_config.d/mpi.conf
COPY sshd_config /etc/ssh/sshd_config.d/mpi.conf
COPY entrypoint.sh /entrypoint.sh
WORKDIR /home/mpiuser
EXPOSE 2222
ENTRYPOINT ["/entrypoint.sh"]
CMD ["/bin/bash"]
