"""append_packed_v1, fetch_packed_v1: a cluster proxy's hop to a shard in binary.

issue 19 asked batched produce and consume + ack through a cluster proxy at
0.8x or more of the same work on the shards directly. PL/Proxy 2.10 sends an
argument, and receives a result, in binary only for plain scalar types: the
bytea[] payloads of append_v5 and the bytea[] / timestamptz columns of
fetch_v4 crossed the proxy as hex-escaped text, printed and parsed per byte
(docs/cluster.md, "Throughput"). The proxy's append_v5 and fetch_v4 keep
their names and signatures for the client and call these two on the
partition's shard: the payloads go as one bytea and their lengths, the fetched
rows with scalar columns only. Both call append_v5 / fetch_v4, so every check
and guarantee stays in one place; called directly they are those functions in
another encoding.

grant_roles_v5 runs at the end: both are public functions of the client class
(SECURITY DEFINER, EXECUTE for txnq_client), like append_v5 and fetch_v4.
Downgrade drops them (a proxy installed for this revision then needs
`txnq cluster init` of the older txnq).

Revision ID: 0028
Revises: 0027
Create Date: 2026-11-27
"""

from __future__ import annotations

from alembic import op

from txnq.database.migrate import apply_sql_files

revision = "0028"
down_revision = "0027"
branch_labels = None
depends_on = None

SQL_FILES = [
    "0028/functions/append_packed_v1.sql",
    "0028/functions/fetch_packed_v1.sql",
]

GRANT_ROLES = "SELECT txnq.grant_roles_v5()"

DOWNGRADE = (
    "DROP FUNCTION txnq.append_packed_v1(integer, integer, bigint, integer, bigint, bytea, "
    "integer[], bytea[], jsonb[], timestamp with time zone[], integer, bigint)",
    "DROP FUNCTION txnq.fetch_packed_v1(integer, integer, bigint, bigint, integer, bigint, "
    "boolean)",
)


def upgrade() -> None:
    apply_sql_files(op.get_bind(), SQL_FILES)
    op.get_bind().connection.driver_connection.execute(GRANT_ROLES)


def downgrade() -> None:
    driver_connection = op.get_bind().connection.driver_connection
    for statement in DOWNGRADE:
        driver_connection.execute(statement)
