"""The MPIJob controller: sample-controller's shape (event -> informer -> queue -> worker, controller.py)
and one reconcile of one job (sync.py) in upstream's order. The sync reads only caches and writes through
the ports (ports.py); upstream's builders render the children (builders/) and our extensions add to them
as decorators (decorators/). docs/architecture.md draws the sync path and where each extension plugs in."""
