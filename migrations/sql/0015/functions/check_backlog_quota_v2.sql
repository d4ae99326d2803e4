-- txnq.check_backlog_quota_v2: check one topic against its backlog quota
-- (Pulsar's backlogQuota), apply its policy, and record the outcome where the
-- append function looks (txnq.backlog_quota_exceeded).
-- Revision 0015: check_backlog_quota_v1 with its argument checked (an unknown
-- topic was silently nothing to do) and an age limit longer than the calendar
-- (no message can be that old) answered without the interval overflow it
-- raised; check_backlog_quota_v1 is a wrapper of it.
--
-- Parameters: topic_id.
-- Limits: the topic's backlog_quota_bytes / backlog_quota_seconds /
--   backlog_quota_policy, each NULL meaning the server default of txnq.config;
--   -1 is no limit. A subscription is over the size limit when its backlog
--   (txnq.subscription_backlog_v1, summed over partitions) holds more payload
--   bytes than the limit, over the age limit when its oldest unacknowledged
--   entry was published more than the limit ago.
-- Policies:
--   producer_hold, producer_error: when a subscription is over, upsert the
--     topic's row of backlog_quota_exceeded (the subscription with the largest
--     backlog, its limit and a message that says what to do); appends then
--     fail (append_v3: TQ017 hold, TQ016 error) until a check finds the topic
--     under quota again and deletes the row.
--   consumer_backlog_eviction: acknowledge, on behalf of each subscription
--     over, its oldest backlog (oldest first across partitions) until it fits
--     again: by size, the oldest entries whose removal brings the bytes to the
--     limit or below; by age, the entries older than the limit. The rules of
--     TTL (expire_ttl_v1): never past the max read offset (an ongoing
--     transaction's entries wait), never past a message pending in an open
--     transaction's acks; markers and aborted entries directly above are
--     folded in (apply_acks_v1). Appends are never refused.
-- Returns one row per subscription over a limit (before any eviction):
--   subscription_id, subscription, over_size, over_age, backlog_bytes,
--   backlog_seconds, limit_bytes, limit_seconds, policy, evicted_entries (by
--   offsets the cursors moved; 0 unless evicting).
-- Locks: a transaction-level advisory lock per topic (one check of a topic at
--   a time: the scheduler, `txnq gc run` and held producers may overlap), then
--   each cursor row while it moves, one at a time.
-- Errors: TQ001 unknown topic (the scheduler skips a topic deleted since it
--   listed them).
CREATE OR REPLACE FUNCTION txnq.check_backlog_quota_v2(p_topic_id integer)
RETURNS TABLE (subscription_id bigint, subscription text, over_size boolean, over_age boolean,
               backlog_bytes bigint, backlog_seconds double precision, limit_bytes bigint,
               limit_seconds double precision, policy text, evicted_entries bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_name text;
    v_limit_bytes bigint;
    v_limit_seconds double precision;
    v_policy text;
    v_cutoff timestamptz;
    v_worst_name text;  -- the first subscription over (largest backlog): the one reported
    v_worst_kind text;
    v_worst_bytes bigint;
    v_worst_age double precision;
    v_target bigint;
    v_after bigint;
    s record;
    r record;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('txnq.backlog_quota'), p_topic_id);
    SELECT t.name, coalesce(t.backlog_quota_bytes, c.backlog_quota_default_limit_bytes),
           coalesce(t.backlog_quota_seconds, c.backlog_quota_default_limit_seconds),
           coalesce(t.backlog_quota_policy, c.backlog_quota_default_policy)
      INTO v_name, v_limit_bytes, v_limit_seconds, v_policy
      FROM txnq.topics t CROSS JOIN txnq.config c WHERE t.topic_id = p_topic_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ001',
            MESSAGE = format('topic id %s does not exist', coalesce(p_topic_id::text, 'NULL')),
            HINT = 'look the topic up by name (txnq.topics); it may have been deleted';
    END IF;
    IF v_limit_bytes < 0 AND v_limit_seconds < 0 THEN
        DELETE FROM txnq.backlog_quota_exceeded q WHERE q.topic_id = p_topic_id;
        RETURN;
    END IF;
    -- An age limit no publish time can be older than (NaN compares above all)
    -- is never passed: -infinity, which nothing precedes.
    v_cutoff := CASE WHEN v_limit_seconds
                          < extract(epoch FROM now() - '0001-01-01 00:00:00+00'::timestamptz)
                     THEN now() - make_interval(secs => greatest(v_limit_seconds, 0))
                     ELSE '-infinity' END;

    FOR s IN SELECT b.subscription_id, b.name, b.backlog_bytes, b.oldest_publish_time,
                    extract(epoch FROM now() - b.oldest_publish_time)::double precision AS age
               FROM txnq.subscription_backlog_v1(p_topic_id) b
              ORDER BY b.backlog_bytes DESC, b.oldest_publish_time, b.name LOOP
        over_size := v_limit_bytes > 0 AND s.backlog_bytes > v_limit_bytes;
        over_age := v_limit_seconds > 0 AND s.oldest_publish_time IS NOT NULL
                    AND s.oldest_publish_time < v_cutoff;
        CONTINUE WHEN NOT (over_size OR over_age);
        subscription_id := s.subscription_id;
        subscription := s.name;
        backlog_bytes := s.backlog_bytes;
        backlog_seconds := s.age;
        limit_bytes := v_limit_bytes;
        limit_seconds := v_limit_seconds;
        policy := v_policy;
        evicted_entries := 0;
        IF v_worst_name IS NULL THEN
            v_worst_name := s.name;
            v_worst_kind := CASE WHEN over_size THEN 'size' ELSE 'age' END;
            v_worst_bytes := s.backlog_bytes;
            v_worst_age := s.age;
        END IF;
        IF v_policy = 'consumer_backlog_eviction' THEN
            -- Per partition, the newest entry to evict: by size, an entry goes
            -- when it and everything newer (across partitions, newest first)
            -- add up to more than the limit; by age, when it is older than the
            -- limit. Publish times never go backwards within a partition, so
            -- both are a prefix of each partition's backlog.
            FOR r IN
                WITH backlog AS (
                    SELECT e.partition, e.entry_offset, e.publish_time,
                           sum(e.payload_bytes) OVER (
                               ORDER BY e.publish_time DESC, e.partition DESC, e.entry_offset DESC
                           ) AS bytes_from_here
                      FROM txnq.cursors cu
                      JOIN txnq.partitions h ON h.topic_id = cu.topic_id AND h.partition = cu.partition
                      JOIN txnq.entries e ON e.topic_id = cu.topic_id AND e.partition = cu.partition
                       AND e.entry_offset > cu.mark_delete_offset AND e.entry_offset <= h.max_read_offset
                     WHERE cu.topic_id = p_topic_id AND cu.subscription_id = s.subscription_id)
                SELECT b.partition, max(b.entry_offset) AS target, cu.mark_delete_offset
                  FROM backlog b
                  JOIN txnq.cursors cu ON cu.topic_id = p_topic_id AND cu.partition = b.partition
                   AND cu.subscription_id = s.subscription_id
                 WHERE (over_size AND b.bytes_from_here > v_limit_bytes)
                    OR (over_age AND b.publish_time < v_cutoff)
                 GROUP BY b.partition, cu.mark_delete_offset
                 ORDER BY b.partition
            LOOP
                -- As expire_ttl_v1: stop before a message pending in an open
                -- transaction's acks (that transaction decides its fate).
                SELECT least(r.target, min(pa.entry_offset) - 1) INTO v_target FROM txnq.pending_acks pa
                 WHERE pa.topic_id = p_topic_id AND pa.partition = r.partition
                   AND pa.subscription_id = s.subscription_id;
                v_target := coalesce(v_target, r.target);
                CONTINUE WHEN v_target <= r.mark_delete_offset;
                v_after := txnq.apply_acks_v1(p_topic_id, r.partition, s.subscription_id, v_target,
                                              '{}', '{}', '{}');
                evicted_entries := evicted_entries + coalesce(v_after - r.mark_delete_offset, 0);
            END LOOP;
        END IF;
        RETURN NEXT;
    END LOOP;

    IF v_worst_name IS NULL OR v_policy = 'consumer_backlog_eviction' THEN
        DELETE FROM txnq.backlog_quota_exceeded q WHERE q.topic_id = p_topic_id;
        RETURN;
    END IF;
    INSERT INTO txnq.backlog_quota_exceeded AS q
           (topic_id, policy, subscription_name, limit_kind, backlog_bytes, backlog_seconds,
            limit_bytes, limit_seconds, reason)
    VALUES (p_topic_id, v_policy, v_worst_name, v_worst_kind, v_worst_bytes, v_worst_age,
            v_limit_bytes, v_limit_seconds,
            format('topic %L is over its backlog quota: subscription %L %s', v_name, v_worst_name,
                   CASE WHEN v_worst_kind = 'size'
                        THEN format('holds %s bytes of unacknowledged messages (limit %s bytes)',
                                    v_worst_bytes, v_limit_bytes)
                        ELSE format('has an unacknowledged message published %ss ago (limit %ss)',
                                    round(v_worst_age::numeric, 1), v_limit_seconds)
                   END))
    ON CONFLICT (topic_id) DO UPDATE
       SET policy = excluded.policy, subscription_name = excluded.subscription_name,
           limit_kind = excluded.limit_kind, backlog_bytes = excluded.backlog_bytes,
           backlog_seconds = excluded.backlog_seconds, limit_bytes = excluded.limit_bytes,
           limit_seconds = excluded.limit_seconds, reason = excluded.reason,
           checked_at = now();
END;
$$;
