"""podgroup package."""
