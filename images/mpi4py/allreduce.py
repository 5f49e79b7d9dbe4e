"""The cluster check: every rank says where it runs and which MPI library it loaded, then all ranks sum
rank + 1 with MPI_Allreduce and each prints the sum it got (n(n+1)/2 for n ranks)."""

from array import array

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
# One line each, flushed at once: a rank whose output interleaves with another's still parses.
print(f"rank {rank} of {size} on {MPI.Get_processor_name()}", flush=True)
# Open MPI ends the string with a NUL.
library = MPI.Get_library_version().rstrip("\x00").splitlines()[0].strip()
print(f"library of rank {rank}: {library}", flush=True)
total = array("q", [0])
comm.Allreduce(array("q", [rank + 1]), total, op=MPI.SUM)
print(f"allreduce of rank {rank}: {total[0]}", flush=True)
