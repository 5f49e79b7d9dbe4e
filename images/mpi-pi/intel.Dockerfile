# mpioperator/mpi-pi:intel: our pi program on mpioperator/intel, compiled in a builder stage with Intel
# MPI's development kit (PyPI's impi-devel) and Debian's gcc, so the image holds neither.
# Build (after mpioperator/intel from images/mpi-base/intel.Dockerfile):
#   docker build -f images/mpi-pi/intel.Dockerfile -t mpioperator/mpi-pi:intel images/mpi-pi
ARG IMPI_VERSION=2021.19.0

FROM mpioperator/intel AS build
ARG IMPI_VERSION
RUN apt-get update \
 && apt-get install -y --no-install-recommends gcc libc6-dev python3-venv \
 && python3 -m venv /opt/pip \
 && /opt/pip/bin/pip install --no-cache-dir --disable-pip-version-check --no-deps --only-binary=:all: \
      --prefix=/opt/intel/mpi "impi-devel==${IMPI_VERSION}"
COPY pi.c /src/pi.c
RUN I_MPI_CC=gcc mpicc -O2 -o /src/pi /src/pi.c -lm

FROM mpioperator/intel
COPY --from=build --chown=1000:1000 /src/pi /home/mpiuser/pi
