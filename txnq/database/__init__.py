"""Everything about talking to PostgreSQL, below every concept of txnq.

- ``connections``: DSNs, connections, SQLAlchemy engines and the translation of
  PostgreSQL errors (TQ codes) into ``txnq.errors``;
- ``plans``: one exchange with the server written once and driven by the sync
  (``run``) and asyncio (``arun``) faces alike;
- ``queries``: the named SQL of ``sql/queries/*.sql``;
- ``schema``: the SQLAlchemy tables (for inspection and tests);
- ``migrate``: Alembic upgrades and the schema check clients run;
- ``embedded``: the embedded PostgreSQL the library starts when no DSN is given.
"""
