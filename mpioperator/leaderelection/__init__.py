"""leaderelection package."""
