"""Test support: a real local Kubernetes control plane built from Go modules (envtest for Python)."""
