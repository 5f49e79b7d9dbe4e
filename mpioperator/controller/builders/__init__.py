"""Pure functions that render an MPIJob's children exactly as upstream does (Appendix A)."""
