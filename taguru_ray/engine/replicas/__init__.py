"""The model's own replicas (`--engine`): a server per replica, started, watched and
stopped by the run (ADR 0080).

- `guard.py` — the process between a replica's actor and its server: it ends the
  server's whole process group when the actor goes, however it goes;
- `server.py` — the server as the actor runs it: spawned under the guard, its log,
  its health and version asked over HTTP, stopped;
- `actor.py` — `Replica`, the Ray actor that holds a replica's GPUs and its server;
- `fleet.py` — the driver's part: start the replicas, register each as an endpoint
  of the gateway, replace a lost one, stop them all as the run ends;
- `words.py` — what the run says about them (pure).

The commands each engine runs are `contract/engines.py`'s.
"""
