-- Revision 0015 (the SQL boundary, producing side): the versions that
-- revision 0015 supersedes become thin wrappers of their successors, with the
-- same signatures, so clients of revisions up to 0014 keep working during an
-- upgrade and get the argument checks and permission checks of the new
-- versions. (The bodies they had stay in their own files, which replaying the
-- older revisions installs and downgrading 0015 reinstalls; this file replaces
-- them.) append_v2 and append_v1 stay wrappers of append_v3, so they reach
-- append_v4 through it.

CREATE OR REPLACE FUNCTION txnq.append_v3(
    p_topic_id integer,
    p_partition integer,
    p_producer_id bigint,
    p_producer_epoch integer,
    p_first_sequence bigint,
    p_payloads bytea[],
    p_keys bytea[] DEFAULT NULL,
    p_properties jsonb[] DEFAULT NULL,
    p_event_times timestamptz[] DEFAULT NULL,
    p_txn_tc integer DEFAULT NULL,
    p_txn_seq bigint DEFAULT NULL,
    OUT entry_offset bigint,
    OUT publish_time timestamptz,
    OUT duplicate boolean,
    OUT roll_entry_log boolean
)
LANGUAGE sql AS $$
    SELECT a.entry_offset, a.publish_time, a.duplicate, a.roll_entry_log
      FROM txnq.append_v4(p_topic_id, p_partition, p_producer_id, p_producer_epoch, p_first_sequence,
                          p_payloads, p_keys, p_properties, p_event_times, p_txn_tc, p_txn_seq) a
$$;

CREATE OR REPLACE FUNCTION txnq.append_delayed_v1(
    p_topic_id integer,
    p_partition integer,
    p_producer_id bigint,
    p_producer_epoch integer,
    p_first_sequence bigint,
    p_payloads bytea[],
    p_keys bytea[],
    p_properties jsonb[],
    p_event_times timestamptz[],
    p_txn_tc integer,
    p_txn_seq bigint,
    p_deliver_at timestamptz,
    OUT entry_offset bigint,
    OUT publish_time timestamptz,
    OUT duplicate boolean,
    OUT roll_entry_log boolean
)
LANGUAGE sql AS $$
    SELECT a.entry_offset, a.publish_time, a.duplicate, a.roll_entry_log
      FROM txnq.append_delayed_v2(p_topic_id, p_partition, p_producer_id, p_producer_epoch, p_first_sequence,
                                  p_payloads, p_keys, p_properties, p_event_times, p_txn_tc, p_txn_seq,
                                  p_deliver_at) a
$$;

CREATE OR REPLACE FUNCTION txnq.create_topic_v1(
    p_name text,
    p_partitions integer,
    p_retention_seconds double precision,
    p_retention_bytes bigint,
    p_ttl_seconds double precision,
    p_max_message_bytes integer
) RETURNS integer
LANGUAGE sql AS $$
    SELECT txnq.create_topic_v2(p_name, p_partitions, p_retention_seconds, p_retention_bytes, p_ttl_seconds,
                                p_max_message_bytes)
$$;

CREATE OR REPLACE FUNCTION txnq.delete_topic_v1(p_topic_id integer, p_force boolean DEFAULT false)
RETURNS void
LANGUAGE sql AS $$
    SELECT txnq.delete_topic_v2(p_topic_id, p_force)
$$;

CREATE OR REPLACE FUNCTION txnq.add_partitions_v1(p_topic_id integer, p_partitions integer)
RETURNS integer
LANGUAGE sql AS $$
    SELECT txnq.add_partitions_v2(p_topic_id, p_partitions)
$$;

CREATE OR REPLACE FUNCTION txnq.register_producer_v1(p_topic_id integer, p_name text)
RETURNS TABLE (producer_id bigint, epoch integer, partition integer, last_sequence bigint)
LANGUAGE sql AS $$
    SELECT r.producer_id, r.epoch, r.partition, r.last_sequence FROM txnq.register_producer_v2(p_topic_id, p_name) r
$$;

CREATE OR REPLACE FUNCTION txnq.init_transactional_id_v1(
    p_transactional_id text,
    OUT epoch integer,
    OUT fenced_tc_ids integer[],
    OUT fenced_txn_seqs bigint[]
)
LANGUAGE sql AS $$
    SELECT i.epoch, i.fenced_tc_ids, i.fenced_txn_seqs FROM txnq.init_transactional_id_v2(p_transactional_id) i
$$;

-- No longer STRICT: a NULL partition count reaches v2 and is refused there.
CREATE OR REPLACE FUNCTION txnq.partition_for_key_v1(p_key bytea, p_partitions integer)
RETURNS integer
LANGUAGE sql IMMUTABLE CALLED ON NULL INPUT AS $$
    SELECT txnq.partition_for_key_v2(p_key, p_partitions)
$$;

CREATE OR REPLACE FUNCTION txnq.open_txn_v1(
    p_tc_id integer,
    p_timeout_seconds double precision,
    OUT tc_id integer,
    OUT txn_seq bigint,
    OUT timeout_at timestamptz
)
LANGUAGE sql AS $$
    SELECT o.tc_id, o.txn_seq, o.timeout_at FROM txnq.open_txn_v2(p_tc_id, p_timeout_seconds) o
$$;

CREATE OR REPLACE FUNCTION txnq.end_txn_v1(
    p_tc_id integer,
    p_txn_seq bigint,
    p_commit boolean,
    p_reason text DEFAULT 'client',
    p_notify boolean DEFAULT false,
    OUT state text,
    OUT reason text
)
LANGUAGE sql AS $$
    SELECT e.state, e.reason FROM txnq.end_txn_v2(p_tc_id, p_txn_seq, p_commit, p_reason, p_notify) e
$$;

CREATE OR REPLACE FUNCTION txnq.bind_txn_v1(
    p_tc_id integer,
    p_txn_seq bigint,
    p_transactional_id text,
    p_epoch integer
) RETURNS void
LANGUAGE sql AS $$
    SELECT txnq.bind_txn_v2(p_tc_id, p_txn_seq, p_transactional_id, p_epoch)
$$;

CREATE OR REPLACE FUNCTION txnq.stage_send_v1(
    p_topic_id integer,
    p_partition integer,
    p_payloads bytea[],
    p_keys bytea[] DEFAULT NULL,
    p_properties jsonb[] DEFAULT NULL,
    p_event_times timestamptz[] DEFAULT NULL
) RETURNS bigint
LANGUAGE sql AS $$
    SELECT txnq.stage_send_v2(p_topic_id, p_partition, p_payloads, p_keys, p_properties, p_event_times)
$$;

CREATE OR REPLACE FUNCTION txnq.send_at_commit_v1(
    p_topic text,
    p_payload bytea,
    p_key bytea DEFAULT NULL,
    p_properties jsonb DEFAULT NULL,
    p_partition integer DEFAULT NULL
) RETURNS bigint
LANGUAGE sql AS $$
    SELECT txnq.send_at_commit_v2(p_topic, p_payload, p_key, p_properties, p_partition)
$$;

CREATE OR REPLACE FUNCTION txnq.publish_staged_v1()
RETURNS TABLE (stage_id bigint, topic_id integer, partition integer, entry_offset bigint,
               first_batch_index integer)
LANGUAGE sql AS $$
    SELECT p.stage_id, p.topic_id, p.partition, p.entry_offset, p.first_batch_index FROM txnq.publish_staged_v2() p
$$;

-- The triggers call publish_staged_at_commit_v2 now (publish_staged_v2.sql);
-- this one stays for whoever attached it to a trigger of their own.
CREATE OR REPLACE FUNCTION txnq.publish_staged_at_commit_v1()
RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM txnq.publish_staged_v2();
    RETURN NULL;
END;
$$;

CREATE OR REPLACE FUNCTION txnq.dead_letter_v1(
    p_topic_id integer,
    p_partition integer,
    p_subscription_id bigint,
    p_entry_offset bigint,
    p_batch_index integer,
    p_dead_letter_topic_id integer,
    p_reason text
) RETURNS boolean
LANGUAGE sql AS $$
    SELECT txnq.dead_letter_v2(p_topic_id, p_partition, p_subscription_id, p_entry_offset, p_batch_index,
                               p_dead_letter_topic_id, p_reason)
$$;
