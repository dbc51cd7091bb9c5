"""Live cluster access: kubeconfig resolution, a raw JSON transport over lightkube's client,
reflectors (list, watch, relist on 410, back-off), compact caches, Lease leader election and
the clock kubemedic reads time from."""
