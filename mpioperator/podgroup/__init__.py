"""Gang scheduling: the PodGroup backends and the maths they share.

`--gang-scheduling` picks one backend (`factory.new_backend`): none (`null`), Volcano (`volcano`),
scheduler-plugins' Coscheduling (`scheduler_plugins`) or Kubernetes' own Workload API (`kubernetes`).
Each renders the desired PodGroup of a job, points pod templates at its scheduler and group, and compares
PodGroup specs (`backend.PodGroupBackend`); `maths` computes the numbers (members, minimum resources,
priority class) as upstream does. Pure code: the controller makes the API calls.
"""
