"""Pure functions that render an MPIJob's children exactly as upstream does; our additions come as
the decorators they are given (controller/decorators/), so nothing here imports an extension."""
