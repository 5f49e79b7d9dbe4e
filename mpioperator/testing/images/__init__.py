"""Container images for the real-node tier, built without Docker and pushed to the local registry."""
