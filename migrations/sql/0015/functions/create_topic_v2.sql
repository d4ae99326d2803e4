-- txnq.create_topic_v2: create a topic with its partitions (head rows) and
-- each partition's first, open ledger. v2 (revision 0015) validates every
-- argument (create_topic_v1 stored NaN, infinite and negative retention and
-- TTL, which broke the lifecycle jobs) and checks the caller's permission;
-- create_topic_v1 becomes a wrapper of it.
--
-- Parameters: name ([A-Za-z0-9._-], 1..200 characters), partitions (1..4096),
--   retention_seconds (-1 forever, 0 none past the slowest cursor, else up to
--   3155760000, i.e. 100 years), retention_bytes (-1 unlimited, else 0 or
--   more), ttl_seconds (NULL: none, else above 0 and up to 100 years),
--   max_message_bytes (1 .. 1073741823: PostgreSQL stores at most 1 GiB in a
--   value). Every number finite, none NULL but ttl_seconds.
-- Returns the topic id.
-- Permissions: txnq.authorize_topic_name_v1(name, 'admin') once the name is
--   valid, before anything is written.
-- Locks: the new topic row (its unique name: a concurrent create of the same
--   name waits, then fails with TQ010).
-- Errors: TQ005 bad arguments, TQ010 the topic exists, TQ018 not permitted.
CREATE OR REPLACE FUNCTION txnq.create_topic_v2(
    p_name text,
    p_partitions integer,
    p_retention_seconds double precision,
    p_retention_bytes bigint,
    p_ttl_seconds double precision,
    p_max_message_bytes integer
) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    -- 100 years of 365.25 days: longer is "forever" (-1) for every purpose, and
    -- now() minus it is still a timestamp the lifecycle jobs can compute.
    c_max_seconds CONSTANT double precision := 3155760000;
    v_topic_id integer;
BEGIN
    IF p_name IS NULL OR p_name !~ '^[A-Za-z0-9._-]{1,200}$' THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('topic name %s is not valid: use 1 to 200 of A-Z a-z 0-9 . _ -',
                             coalesce(quote_literal(left(p_name, 250)), 'NULL')),
            HINT = 'pick a valid name; nothing was created';
    END IF;
    IF p_partitions IS NULL OR p_partitions NOT BETWEEN 1 AND 4096 THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('a topic has 1 to 4096 partitions, not %s', coalesce(p_partitions::text, 'NULL')),
            HINT = 'pass a partition count from 1 to 4096 (add_partitions grows it later); nothing was created';
    END IF;
    IF p_retention_seconds IS DISTINCT FROM -1 THEN
        PERFORM txnq.require_number_v1('retention_seconds (-1: forever)', p_retention_seconds, 0, c_max_seconds);
    END IF;
    IF p_retention_bytes IS NULL OR p_retention_bytes < -1 THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('retention_bytes must be -1 (unlimited) or 0 or more, not %s',
                             coalesce(p_retention_bytes::text, 'NULL')),
            HINT = 'correct the argument and call again; nothing was created';
    END IF;
    IF p_ttl_seconds IS NOT NULL AND NOT (p_ttl_seconds > 0 AND p_ttl_seconds <= c_max_seconds) THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('ttl_seconds must be NULL (no TTL) or a finite number above 0 and at most %s, not %s',
                             c_max_seconds, p_ttl_seconds),
            HINT = 'pass NULL for no TTL; nothing was created';
    END IF;
    IF p_max_message_bytes IS NULL OR p_max_message_bytes NOT BETWEEN 1 AND 1073741823 THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('max_message_bytes must be from 1 to 1073741823, not %s',
                             coalesce(p_max_message_bytes::text, 'NULL')),
            HINT = 'correct the argument and call again; nothing was created';
    END IF;
    PERFORM txnq.authorize_topic_name_v1(p_name, 'admin');

    INSERT INTO txnq.topics (name, partitions, retention_seconds, retention_bytes, ttl_seconds, max_message_bytes)
    VALUES (p_name, p_partitions, p_retention_seconds, p_retention_bytes, p_ttl_seconds, p_max_message_bytes)
    ON CONFLICT (name) DO NOTHING
    RETURNING topic_id INTO v_topic_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ010', MESSAGE = format('topic %L exists already', p_name),
            HINT = 'pick another name, or update the existing topic';
    END IF;
    -- The partitions of a new topic: head rows and their first ledgers (what
    -- add_partitions does, without its permission check and subscriptions:
    -- the topic has none yet).
    INSERT INTO txnq.partitions (topic_id, partition)
    SELECT v_topic_id, p FROM generate_series(0, p_partitions - 1) AS p;
    INSERT INTO txnq.ledgers (topic_id, partition, ledger_id, first_offset, metadata)
    SELECT v_topic_id, p, 0, 0, jsonb_build_object('topic', p_name, 'topic_id', v_topic_id, 'partition', p)
      FROM generate_series(0, p_partitions - 1) AS p;
    RETURN v_topic_id;
END;
$$;
