"""A txnq cluster: topics sharded over several PostgreSQL servers on PL/Proxy.

See docs/cluster.md. :mod:`txnq.cluster.setup` installs and inspects a
cluster; :mod:`txnq.cluster.servers` starts throwaway servers for tests.
"""
