"""The operator process: flags, logging, health and metrics endpoints, leader election, start-up."""
