# mpioperator/mpi-pi:openmpi5: our pi program on mpioperator/openmpi5 (the wheel's mpicc, with Debian's
# gcc), compiled in a builder stage so the image holds no compiler.
# Build (after mpioperator/openmpi5 from images/mpi-base/openmpi5.Dockerfile):
#   docker build -f images/mpi-pi/openmpi5.Dockerfile -t mpioperator/mpi-pi:openmpi5 images/mpi-pi
FROM mpioperator/openmpi5 AS build
RUN apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev
COPY pi.c /src/pi.c
RUN mpicc -O2 -o /src/pi /src/pi.c -lm

FROM mpioperator/openmpi5
COPY --from=build --chown=1000:1000 /src/pi /home/mpiuser/pi
