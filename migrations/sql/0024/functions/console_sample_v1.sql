-- txnq.console_sample_v1: one sample of every topic's counters and of the
-- entry logs, for the web console's charts (docs/console.md), and the
-- history's bound. Revision 0024; run by the scheduler's console_sample job.
--
-- Parameters: p_keep_seconds, how long samples and console actions are kept
-- (CONSOLE_HISTORY_SECONDS, > 0). Returns the number of topics sampled.
-- Reads only head rows, cursors, ledgers and entry logs' catalog sizes,
-- never entries (the backlog is in entries, from offsets: an upper bound
-- that counts markers and individually acked entries). Deletes samples and
-- console actions older than p_keep_seconds, so both stay bounded.
-- Locks: none beyond the rows it inserts and deletes. Errors: TQ005 for a
-- p_keep_seconds that is not positive. Scheduler only.
CREATE OR REPLACE FUNCTION txnq.console_sample_v1(p_keep_seconds double precision)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    v_now timestamptz := pg_catalog.now();
    v_topics integer;
BEGIN
    IF p_keep_seconds IS NULL OR NOT p_keep_seconds > 0 OR p_keep_seconds = 'Infinity' THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('console history must be kept a positive number of seconds, not %s',
                             coalesce(p_keep_seconds::text, 'NULL')),
            HINT = 'set CONSOLE_HISTORY_SECONDS, e.g. 86400';
    END IF;
    INSERT INTO txnq.topic_samples
        (topic_id, sampled_at, entries_written, entries_acked, backlog_entries, live_ledgers, live_bytes)
    SELECT t.topic_id, v_now,
           coalesce((SELECT sum(p.next_offset) FROM txnq.partitions p
                      WHERE p.topic_id = t.topic_id), 0),
           coalesce((SELECT sum(c.mark_delete_offset + 1) FROM txnq.cursors c
                      WHERE c.topic_id = t.topic_id), 0),
           coalesce((SELECT sum(greatest(p.max_read_offset - c.mark_delete_offset, 0))
                       FROM txnq.cursors c
                       JOIN txnq.partitions p
                         ON p.topic_id = c.topic_id AND p.partition = c.partition
                      WHERE c.topic_id = t.topic_id), 0),
           (SELECT count(*) FROM txnq.ledgers l
             WHERE l.topic_id = t.topic_id AND l.state <> 'DELETED'),
           coalesce((SELECT sum(l.size_bytes) FROM txnq.ledgers l
                      WHERE l.topic_id = t.topic_id AND l.state <> 'DELETED'), 0)
      FROM txnq.topics t
    ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS v_topics = ROW_COUNT;
    INSERT INTO txnq.storage_samples (sampled_at, entry_logs, entry_log_bytes, ledgers)
    SELECT v_now,
           count(*),
           coalesce(sum(CASE WHEN to_regclass('txnq.' || quote_ident(e.table_name)) IS NULL THEN 0
                             ELSE pg_catalog.pg_total_relation_size(
                                      to_regclass('txnq.' || quote_ident(e.table_name))) END), 0),
           (SELECT count(*) FROM txnq.ledgers l WHERE l.state <> 'DELETED')
      FROM txnq.entry_logs e
     WHERE e.state <> 'DROPPED'
    ON CONFLICT DO NOTHING;
    DELETE FROM txnq.topic_samples
     WHERE sampled_at < v_now - make_interval(secs => p_keep_seconds);
    DELETE FROM txnq.storage_samples
     WHERE sampled_at < v_now - make_interval(secs => p_keep_seconds);
    DELETE FROM txnq.console_actions
     WHERE at < v_now - make_interval(secs => p_keep_seconds);
    RETURN v_topics;
END $$;
