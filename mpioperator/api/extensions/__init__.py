"""Our extensions' side of the API (docs/extensions.md): for each, what its annotations mean and how a job
asking for it is validated. The keys, their readers and defaults are in one table (api/annotation_keys.py);
the controller's side of each extension is a feature (controller/features/).

- launch.py: the worker start-up deadline, the kept failed launcher, the exec launch agent, the wait for
  the hosts' port;
- host_wait.py: what the operator and the launcher's `wait-for-hosts` init container agree on;
- restarts.py: whole-job restarts and the attempt label;
- conveniences.py: habits from other MPI operators (debug mode, the generated mpirun line, a Secret of the
  user's own, rolled workers);
- replica_modes.py: debug and resume commands per replica type;
- elastic.py: the bounds on an elastic job's workers (`kubectl scale` within them);
- launcher_log.py: progress and stalled jobs, read off the launcher's log.
"""
