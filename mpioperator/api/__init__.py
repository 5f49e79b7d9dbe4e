"""The MPIJob API (`kubeflow.org/v2beta1`) as plain dicts: constants, accessors, defaulting and validation
as upstream's, the object names and owner references of its children, and our opt-in extensions: every
`mpioperator.io/` key in one table (annotation_keys.py), each extension's readers and checks beside it.
Nothing here talks to the API server; every layer above may use it (docs/architecture.md)."""
