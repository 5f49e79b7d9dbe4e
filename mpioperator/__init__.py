"""mpioperator: a Kubernetes operator for MPI training jobs (kubeflow.org/v2beta1 MPIJob)."""

__version__ = "0.1.0.dev0"
