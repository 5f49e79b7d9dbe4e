"""cache package."""
