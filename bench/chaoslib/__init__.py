"""The chaos suite's shared parts: a Jepsen-style history checker (history.py,
independent of txnq), the processes and faults of the transactional copier
(cluster.py, copier.py) and the workloads themselves (workloads.py).

``tests/chaos/`` runs them in a short, bounded form; ``bench/chaos.py`` runs
them long and prints the table the README shows.
"""
