"""The txnq schema described with SQLAlchemy Core: Alembic's target metadata.

The DDL itself lives in ``migrations/sql/<revision>/schema/*.sql`` and is applied by the Alembic
revisions; ``tests/sql_api/test_migrations.py`` diffs a migrated database against
this metadata, so the two cannot drift apart.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Double,
    Identity,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    SmallInteger,
    Table,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, OID, TIMESTAMP, UUID
from sqlalchemy.dialects.postgresql import base as postgresql_base
from sqlalchemy.types import UserDefinedType

SCHEMA = "txnq"
metadata = MetaData(schema=SCHEMA)
TZ = TIMESTAMP(timezone=True)


def _key(*names: str) -> list[Column[int]]:
    kinds = {"topic_id": Integer, "partition": Integer, "tc_id": Integer, "batch_index": Integer}
    return [Column(name, kinds.get(name, BigInteger), primary_key=True) for name in names]


config = Table(
    "config",
    metadata,
    Column("singleton", Boolean, primary_key=True),
    Column("active_entry_log_id", Integer, nullable=False),
    Column("ledger_max_entries", BigInteger, nullable=False),
    Column("ledger_max_bytes", BigInteger, nullable=False),
    Column("ledger_min_rollover_seconds", Double, nullable=False),
    Column("ledger_max_rollover_seconds", Double, nullable=False),
    Column("entry_log_max_bytes", BigInteger, nullable=False),
    Column("entry_log_max_age_seconds", Double, nullable=False),
    Column("updated_at", TZ, nullable=False),
    Column("tc_count", Integer, nullable=False),
    Column("txn_max_timeout_seconds", Double, nullable=False),
    Column("backlog_quota_default_limit_bytes", BigInteger, nullable=False),
    Column("backlog_quota_default_limit_seconds", Double, nullable=False),
    Column("backlog_quota_default_policy", Text, nullable=False),
    # Revision 0020: the epoch a new transactional id starts at (raised by
    # the history purge above the epochs of the ids it forgets).
    Column("transactional_epoch_floor", Integer, nullable=False, server_default=text("0")),
)

topics = Table(
    "topics",
    metadata,
    Column("topic_id", Integer, Identity(always=True), primary_key=True),
    Column("name", Text, nullable=False, unique=True),
    Column("partitions", Integer, nullable=False),
    Column("retention_seconds", Double, nullable=False),
    Column("retention_bytes", BigInteger, nullable=False),
    Column("ttl_seconds", Double),
    Column("max_message_bytes", Integer, nullable=False),
    Column("created_at", TZ, nullable=False),
    # Backlog quota (revision 0006); NULL: the server default, -1: no limit.
    Column("backlog_quota_bytes", BigInteger),
    Column("backlog_quota_seconds", Double),
    Column("backlog_quota_policy", Text),
)

partitions = Table(
    "partitions",
    metadata,
    *_key("topic_id", "partition"),
    Column("next_offset", BigInteger, nullable=False),
    Column("max_read_offset", BigInteger, nullable=False),
    Column("ledger_id", BigInteger, nullable=False),
    Column("ledger_first_offset", BigInteger, nullable=False),
    Column("ledger_bytes", BigInteger, nullable=False),
    Column("ledger_opened_at", TZ, nullable=False),
    Column("last_publish_time", TZ),
    Column("ongoing_txns", Integer, nullable=False),
    postgresql_with={"fillfactor": 50},
)

ledgers = Table(
    "ledgers",
    metadata,
    *_key("topic_id", "partition", "ledger_id"),
    Column("first_offset", BigInteger, nullable=False),
    Column("last_offset", BigInteger),
    Column("size_bytes", BigInteger),
    Column("state", Text, nullable=False),
    Column("created_at", TZ, nullable=False),
    Column("closed_at", TZ),
    Column("deleted_at", TZ),
    Column("metadata", JSONB, nullable=False),
)

entry_logs = Table(
    "entry_logs",
    metadata,
    Column("entry_log_id", Integer, primary_key=True, autoincrement=False),
    Column("table_name", Text, nullable=False, unique=True),
    Column("state", Text, nullable=False),
    Column("created_at", TZ, nullable=False),
    Column("sealed_at", TZ),
    Column("dropped_at", TZ),
    # A COMPACTING log receives the live rows of this sealed log (revision 0004).
    Column("compacted_from", Integer),
    # Of a COMPACTING log: the source rows its last catch-up counted (revision 0015).
    Column("compaction_source_rows", BigInteger),
    Index(
        "entry_logs_one_compaction_per_source",
        "compacted_from",
        unique=True,
        postgresql_where=text("state = 'COMPACTING'"),
    ),
)

entries = Table(
    "entries",
    metadata,
    *_key("topic_id", "partition", "entry_offset"),
    Column("entry_log_id", Integer, primary_key=True, autoincrement=False),
    Column("ledger_id", BigInteger, nullable=False),
    Column("publish_time", TZ, nullable=False),
    Column("producer_id", BigInteger),
    Column("first_sequence", BigInteger),
    Column("message_count", Integer, nullable=False),
    Column("payload_bytes", BigInteger, nullable=False),
    Column("payloads", ARRAY(LargeBinary), nullable=False),
    Column("keys", ARRAY(LargeBinary)),
    Column("properties", ARRAY(JSONB)),
    Column("event_times", ARRAY(TZ)),
    Column("txn_tc", Integer),
    Column("txn_seq", BigInteger),
    Column("marker", SmallInteger),
    Index("entries_publish_time_brin", "publish_time", postgresql_using="brin"),
    postgresql_partition_by="LIST (entry_log_id)",
)

subscriptions = Table(
    "subscriptions",
    metadata,
    Column("subscription_id", BigInteger, Identity(always=True), primary_key=True),
    Column("topic_id", Integer, nullable=False),
    Column("name", Text, nullable=False),
    Column("subscription_type", Text, nullable=False),
    Column("isolation", Text, nullable=False),
    Column("created_at", TZ, nullable=False),
    UniqueConstraint("topic_id", "name"),
)

cursors = Table(
    "cursors",
    metadata,
    *_key("topic_id", "partition", "subscription_id"),
    Column("mark_delete_offset", BigInteger, nullable=False),
    Column("generation", Integer, nullable=False),
    Column("updated_at", TZ, nullable=False),
    # Shared and key_shared subscriptions (revision 0008): how far messages were handed out.
    Column("dispatch_offset", BigInteger),
    Column("dispatch_generation", Integer),
    postgresql_with={"fillfactor": 50},
)

individual_acks = Table(
    "individual_acks",
    metadata,
    *_key("topic_id", "partition", "subscription_id", "entry_offset"),
    Column("batch_size", Integer, nullable=False),
    Column("acked_batch_indexes", ARRAY(Integer)),
)

consumers = Table(
    "consumers",
    metadata,
    Column("consumer_id", BigInteger, Identity(always=True), primary_key=True),
    Column("subscription_id", BigInteger, nullable=False),
    Column("topic_id", Integer, nullable=False),
    Column("name", Text, nullable=False),
    Column("priority", Integer, nullable=False),
    Column("connected_at", TZ, nullable=False),
    Column("lease_expires_at", TZ, nullable=False),
    Index("consumers_subscription", "subscription_id"),
    postgresql_with={"fillfactor": 50},
)

consumer_waiters = Table(
    "consumer_waiters",
    metadata,
    *_key("topic_id", "partition", "consumer_id"),
    Column("since", TZ, nullable=False),
)

producers = Table(
    "producers",
    metadata,
    Column("producer_id", BigInteger, Identity(always=True), primary_key=True),
    Column("topic_id", Integer, nullable=False),
    Column("name", Text, nullable=False),
    Column("epoch", Integer, nullable=False),
    Column("created_at", TZ, nullable=False),
    Column("last_seen_at", TZ, nullable=False),
    UniqueConstraint("topic_id", "name"),
)

producer_sequences = Table(
    "producer_sequences",
    metadata,
    *_key("topic_id", "partition", "producer_id"),
    Column("last_sequence", BigInteger, nullable=False),
    Column("recent_first_sequences", ARRAY(BigInteger), nullable=False),
    Column("recent_offsets", ARRAY(BigInteger), nullable=False),
    Column("recent_counts", ARRAY(Integer), nullable=False),
    postgresql_with={"fillfactor": 50},
)


# -- revision 0002: transactions ------------------------------------------------

coordinators = Table(
    "coordinators",
    metadata,
    Column("tc_id", Integer, primary_key=True, autoincrement=False),
    Column("next_txn_seq", BigInteger, nullable=False),
    Column("owner", Text),
    Column("owned_since", TZ),
    # Revision 0026: numbers are handed out up to reserved_txn_seq, a block
    # reserved durably; incarnation: the server incarnation of the last open.
    Column("reserved_txn_seq", BigInteger, nullable=False, server_default=text("0")),
    Column("incarnation", UUID),
    postgresql_with={"fillfactor": 50},
)

# Revision 0026: the server's incarnation, one row in an UNLOGGED table that
# crash recovery empties (docs/transactions.md, "One WAL flush per transaction").
server_incarnation = Table(
    "server_incarnation",
    metadata,
    Column("singleton", Boolean, primary_key=True, server_default=text("true")),
    Column("incarnation", UUID, nullable=False, server_default=text("gen_random_uuid()")),
    Column("since", TZ, nullable=False, server_default=text("now()")),
    prefixes=["UNLOGGED"],
)

transactional_ids = Table(
    "transactional_ids",
    metadata,
    Column("transactional_id", Text, primary_key=True),
    Column("epoch", Integer, nullable=False),
    Column("updated_at", TZ, nullable=False),
)

transactions = Table(
    "transactions",
    metadata,
    *_key("tc_id", "txn_seq"),
    Column("state", Text, nullable=False),
    Column("reason", Text),
    Column("timeout_seconds", Double, nullable=False),
    Column("opened_at", TZ, nullable=False),
    Column("timeout_at", TZ, nullable=False),
    Column("decided_at", TZ),
    Column("completed_at", TZ),
    Column("transactional_id", Text),
    Column("producer_epoch", Integer),
    # The role that opened it (revision 0015, docs/security.md); NULL: opened before.
    Column("opened_by", OID, server_default=text("txnq.caller_role_v1()")),
    # Revision 0026: the server incarnation of an unflushed open (NULL: durable).
    Column("incarnation", UUID),
    Index("transactions_open_by_timeout", "timeout_at"),
    Index("transactions_deciding", "tc_id", "txn_seq"),
    Index("transactions_open_by_transactional_id", "transactional_id"),
    postgresql_with={"fillfactor": 50},
)

txn_partitions = Table(
    "txn_partitions",
    metadata,
    *_key("tc_id", "txn_seq", "topic_id", "partition"),
    Column("first_offset", BigInteger, nullable=False),
    Column("marker_offset", BigInteger),
)

txn_subscriptions = Table(
    "txn_subscriptions",
    metadata,
    *_key("tc_id", "txn_seq", "topic_id", "partition", "subscription_id"),
    Column("done", Boolean, nullable=False),
)

txn_log = Table(
    "txn_log",
    metadata,
    Column("tc_id", Integer, nullable=False),
    Column("txn_seq", BigInteger, nullable=False),
    Column("at", TZ, nullable=False),
    Column("state", Text, nullable=False),
    Column("reason", Text),
    Column("detail", Text),
    Index("txn_log_by_txn", "tc_id", "txn_seq"),
    # Revision 0020: by time, each period a partition (txn_log_<start>, made
    # and dropped by txnq.txn_log_maintain_v1), and txn_log_default.
    postgresql_partition_by="RANGE (at)",
)

txn_buffer_ongoing = Table(
    "txn_buffer_ongoing",
    metadata,
    *_key("topic_id", "partition", "tc_id", "txn_seq"),
    Column("first_offset", BigInteger, nullable=False),
)

aborted_txns = Table(
    "aborted_txns",
    metadata,
    *_key("topic_id", "partition", "tc_id", "txn_seq"),
    Column("first_offset", BigInteger, nullable=False),
    Column("marker_offset", BigInteger, nullable=False),
)

pending_acks = Table(
    "pending_acks",
    metadata,
    *_key("topic_id", "partition", "subscription_id", "entry_offset", "batch_index"),
    Column("batch_size", Integer, nullable=False),
    Column("cumulative", Boolean, nullable=False),
    Column("tc_id", Integer, nullable=False),
    Column("txn_seq", BigInteger, nullable=False),
    Index("pending_acks_by_txn", "tc_id", "txn_seq"),
)

gc_runs = Table(
    "gc_runs",
    metadata,
    Column("run_id", BigInteger, Identity(always=True), primary_key=True),
    Column("job", Text, nullable=False),
    Column("dry_run", Boolean, nullable=False),
    Column("started_at", TZ, nullable=False),
    Column("finished_at", TZ, nullable=False),
    Column("items", BigInteger, nullable=False),
    Column("bytes", BigInteger, nullable=False),
    Column("details", JSONB, nullable=False),
    Column("failures", Integer, nullable=False),  # revision 0016
    Index("gc_runs_job_time", "job", "started_at"),
)

# What the lifecycle jobs and the marker phase are failing on now, per topic,
# partition, entry log or transaction (revision 0016).
job_failures = Table(
    "job_failures",
    metadata,
    Column("job", Text, primary_key=True),
    Column("topic_id", Integer, primary_key=True, autoincrement=False),
    Column("partition", Integer, primary_key=True, autoincrement=False),
    Column("subject", Text, primary_key=True),
    Column("topic", Text),
    Column("error", Text, nullable=False),
    Column("sqlstate", Text),
    Column("failures", BigInteger, nullable=False),
    Column("first_failed_at", TZ, nullable=False),
    Column("last_failed_at", TZ, nullable=False),
)

# The web console's chart history, sampled by the scheduler's console_sample
# job and its audit trail (revision 0023, docs/console.md); all three are
# bounded by CONSOLE_HISTORY_SECONDS (txnq.console_sample_v1).
topic_samples = Table(
    "topic_samples",
    metadata,
    Column("topic_id", Integer, primary_key=True, autoincrement=False),
    Column("sampled_at", TZ, primary_key=True),
    Column("entries_written", BigInteger, nullable=False),
    Column("entries_acked", BigInteger, nullable=False),
    Column("backlog_entries", BigInteger, nullable=False),
    Column("live_ledgers", Integer, nullable=False),
    Column("live_bytes", BigInteger, nullable=False),
)

storage_samples = Table(
    "storage_samples",
    metadata,
    Column("sampled_at", TZ, primary_key=True),
    Column("entry_logs", Integer, nullable=False),
    Column("entry_log_bytes", BigInteger, nullable=False),
    Column("ledgers", Integer, nullable=False),
)

console_actions = Table(
    "console_actions",
    metadata,
    Column("action_id", BigInteger, Identity(always=True), primary_key=True),
    Column("at", TZ, nullable=False, server_default=text("now()")),
    Column("role", Text, nullable=False),
    Column("action", Text, nullable=False),
    Column("target", Text, nullable=False),
    Column("details", JSONB, nullable=False, server_default=text("'{}'")),
    Column("error", Text),
    Index("console_actions_by_time", "at"),
)

# The topics the last backlog quota check found over their quota (revision 0006).
backlog_quota_exceeded = Table(
    "backlog_quota_exceeded",
    metadata,
    Column("topic_id", Integer, primary_key=True, autoincrement=False),
    Column("policy", Text, nullable=False),
    Column("subscription_name", Text, nullable=False),
    Column("limit_kind", Text, nullable=False),
    Column("backlog_bytes", BigInteger, nullable=False),
    Column("backlog_seconds", Double),
    Column("limit_bytes", BigInteger, nullable=False),
    Column("limit_seconds", Double, nullable=False),
    Column("reason", Text, nullable=False),
    Column("since", TZ, nullable=False),
    Column("checked_at", TZ, nullable=False),
)

# Shared and key_shared subscriptions (revision 0008, docs/subscriptions.md):
# one row per message handed out and not acknowledged yet.
claims = Table(
    "claims",
    metadata,
    *_key("topic_id", "partition", "subscription_id", "entry_offset", "batch_index"),
    Column("batch_size", Integer, nullable=False),
    Column("key_hash", Integer),
    Column("consumer_id", BigInteger),
    Column("visible_at", TZ, nullable=False),
    Column("delivered", Integer, nullable=False),
    Column("reason", Text),
    Column("txn_tc", Integer),
    Column("txn_seq", BigInteger),
    Index("claims_by_visibility", "subscription_id", "visible_at"),
    postgresql_with={"fillfactor": 70},
)

# Shared subscriptions' claims of new messages as offset ranges (revision
# 0027, migrations/sql/0027/schema/0025_claim_ranges.sql): one row per claim
# call and partition, deleted when all of its messages are acknowledged.
claim_ranges = Table(
    "claim_ranges",
    metadata,
    *_key("topic_id", "partition", "subscription_id", "first_offset"),
    Column("last_offset", BigInteger, nullable=False),
    Column("consumer_id", BigInteger, nullable=False),
    Column("visible_at", TZ, nullable=False),
    Column("batch_sizes", ARRAY(Integer), nullable=False),
    Column("message_count", Integer, nullable=False),
    Column("acked_count", Integer, nullable=False, server_default=text("0")),
    Column(
        "acked_offsets", ARRAY(BigInteger), nullable=False, server_default=text("'{}'::bigint[]")
    ),
    Column("acked_indexes", ARRAY(Integer), nullable=False, server_default=text("'{}'::integer[]")),
    Index("claim_ranges_by_visibility", "subscription_id", "visible_at"),
    postgresql_with={"fillfactor": 70},
)

# Delivery times of delayed messages (revision 0008).
delayed_entries = Table(
    "delayed_entries",
    metadata,
    *_key("topic_id", "partition", "entry_offset"),
    Column("deliver_at", TZ, nullable=False),
)


class Xid8(UserDefinedType[int]):
    """PostgreSQL's 64-bit transaction id (pg_current_xact_id())."""

    cache_ok = True

    def get_col_spec(self, **kw: object) -> str:
        return "xid8"


# Reflection (the migration test's diff) then knows the type too.
postgresql_base.ischema_names.setdefault("xid8", Xid8)

# Application transactions (revision 0010, docs/exactly-once.md): what an open
# PostgreSQL transaction staged, keyed by its id, published inside its COMMIT.
staged_sends = Table(
    "staged_sends",
    metadata,
    Column("xact", Xid8, primary_key=True, server_default=text("pg_current_xact_id()")),
    Column("stage_id", BigInteger, Identity(always=False), primary_key=True),
    Column("topic_id", Integer, nullable=False),
    Column("partition", Integer, nullable=False),
    Column("payloads", ARRAY(LargeBinary), nullable=False),
    Column("keys", ARRAY(LargeBinary)),
    Column("properties", ARRAY(JSONB)),
    Column("event_times", ARRAY(TZ)),
)

staged_acks = Table(
    "staged_acks",
    metadata,
    Column("xact", Xid8, primary_key=True, server_default=text("pg_current_xact_id()")),
    Column("stage_id", BigInteger, Identity(always=False), primary_key=True),
    Column("topic_id", Integer, nullable=False),
    Column("partition", Integer, nullable=False),
    Column("subscription_id", BigInteger, nullable=False),
    Column("offsets", ARRAY(BigInteger), nullable=False),
    Column("batch_indexes", ARRAY(Integer), nullable=False),
    Column("batch_sizes", ARRAY(Integer), nullable=False),
)


# Incremental Spark ingestions and two-phase-commit sinks (revision 0009, docs/spark.md).
spark_ingestions = Table(
    "spark_ingestions",
    metadata,
    Column("name", Text, primary_key=True),
    Column("topic_id", Integer, nullable=False),
    Column("committed_run", BigInteger, nullable=False),
    Column("committed_offsets", ARRAY(BigInteger), nullable=False),
    Column("planned_run", BigInteger),
    Column("planned_offsets", ARRAY(BigInteger)),
    Column("created_at", TZ, nullable=False),
    Column("updated_at", TZ, nullable=False),
)

sink_transactions = Table(
    "sink_transactions",
    metadata,
    Column("transactional_id", Text, primary_key=True),
    Column("tc_id", Integer, primary_key=True, autoincrement=False),
    Column("txn_seq", BigInteger, primary_key=True, autoincrement=False),
    Column("state", Text, nullable=False),
    Column("checkpoint_id", BigInteger),
    Column("begun_at", TZ, nullable=False),
    Column("prepared_at", TZ),
)


# Per-topic permissions (revision 0015, docs/security.md): a role may produce,
# consume or administer a topic, or every topic whose name starts with a prefix.
topic_permissions = Table(
    "topic_permissions",
    metadata,
    Column("resource", Text(collation="C"), primary_key=True),
    Column("is_prefix", Boolean, primary_key=True),
    Column("grantee", Text, primary_key=True),
    Column("action", Text, primary_key=True),
    Column("granted_by", Text, nullable=False),
    Column("granted_at", TZ, nullable=False),
    Index("topic_permissions_by_grantee", "grantee", "resource"),
    Index("topic_permissions_prefixes", "resource", postgresql_where=text("is_prefix")),
)
