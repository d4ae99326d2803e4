"""Side-by-side benchmark: txnq next to the PostgreSQL queues users would pick
instead (PgQ, pgqueuer, procrastinate, pgmq) and next to raw PostgreSQL, on one
server with the same 100-byte payloads, in one run.

    python -m bench.peers [--dsn DSN] [--messages 200000] [--runs 3] [--smoke] [--json]

See docs/benchmarks.md for what is measured, how, and the latest figures.
"""
