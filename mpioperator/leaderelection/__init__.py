"""Lease-based leader election with client-go's timing: only the leader runs the controller.

`record` decides, as pure functions over a Lease's holder and times, whether to acquire, renew or wait
(expiry judged by our own monotonic clock, so skew between replicas steals nothing); `elector` runs that
decision on the event loop and stops the leading work when the lease is lost or released.
"""
