"""``kubemedic run``: the daemon that records what the cluster says into the archive and scans it
on a schedule."""
