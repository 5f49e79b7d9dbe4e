"""The `kubectl mpijob` plugin: a thin command line over mpioperator.client."""
