# mpioperator/mpi-pi:openmpi: our pi program on mpioperator/openmpi, compiled in a builder stage so the
# image holds no compiler.
# Build (after mpioperator/openmpi from images/mpi-base/openmpi.Dockerfile):
#   docker build -f images/mpi-pi/openmpi.Dockerfile -t mpioperator/mpi-pi:openmpi images/mpi-pi
FROM mpioperator/openmpi AS build
RUN apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev libopenmpi-dev
COPY pi.c /src/pi.c
RUN mpicc.openmpi -O2 -o /src/pi /src/pi.c -lm

FROM mpioperator/openmpi
COPY --from=build --chown=1000:1000 /src/pi /home/mpiuser/pi
