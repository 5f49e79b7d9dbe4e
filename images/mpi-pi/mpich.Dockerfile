# mpioperator/mpi-pi:mpich: our pi program on mpioperator/mpich (the wheel's mpicc, with Debian's gcc),
# compiled in a builder stage so the image holds no compiler.
# Build (after mpioperator/mpich from images/mpi-base/mpich.Dockerfile):
#   docker build -f images/mpi-pi/mpich.Dockerfile -t mpioperator/mpi-pi:mpich images/mpi-pi
FROM mpioperator/mpich AS build
RUN apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev
COPY pi.c /src/pi.c
RUN MPICH_CC=gcc mpicc -O2 -o /src/pi /src/pi.c -lm

FROM mpioperator/mpich
COPY --from=build --chown=1000:1000 /src/pi /home/mpiuser/pi
