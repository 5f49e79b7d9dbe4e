"""A real Kubernetes node next to the local control plane: containerd, runc, a CNI bridge, CoreDNS and a
kubelet, so MPI programs really run (kwok nodes run no containers). See ../shared/docs/real-node.md."""
