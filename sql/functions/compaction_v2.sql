-- Entry-log compaction, revision 0015 (compaction_begin_v2 a wrapper of
-- compaction_begin_v3 since revision 0023; the design: compaction_v1.sql; the
-- caller: txnq/lifecycle.py). The v2 functions check their arguments, which
-- the v1 functions (now wrappers of these, superseded_0015_workers.sql)
-- trusted:
--   compaction_begin_v2     a NULL source is named as such;
--   compaction_copy_v2      NULL keys and budgets, a row or byte budget below
--                           1 (a raw LIMIT error, or a copy of nothing that
--                           looked finished) and a resume key behind the
--                           target's last key (a raw duplicate-key error) are
--                           TQ005;
--   compaction_catch_up_v2  counts the source before copying (v1 counted
--                           after, so a row appended in between was counted
--                           but not copied and the swap saw no reason to
--                           catch up) and records the count on the target;
--   compaction_swap_v2      takes only the count the catch-up recorded (v1
--                           trusted any count, and a NULL or stale one skipped
--                           the catch-up under the lock: live rows were
--                           dropped with the source) and a lock timeout from
--                           1 ms to 60 s (v1 passed any text to lock_timeout:
--                           raw errors, or 0, waiting forever while appends
--                           queue behind the swap's lock request);
--   compaction_abandon_v2   a NULL or unknown target is an error (v1 did
--                           nothing); abandoning a log that is no longer
--                           COMPACTING still does nothing (idempotent).
--   compaction_tables_v2    (an internal helper) and compaction_last_key_v2
--                           name a NULL target and say what to pass.
-- compaction_columns_v1 stays as it is (an internal helper with fixed
-- arguments).
--
-- Table names come from integer ids only (entries_NNNNNN), quoted with %I.

-- compaction_begin_v2: superseded by compaction_begin_v3 (revision 0023: the
-- new table takes the compression of txnq.entries' columns); kept for the
-- clients of earlier revisions as its thin wrapper (same signature and result).
CREATE OR REPLACE FUNCTION txnq.compaction_begin_v2(p_source integer)
RETURNS integer
LANGUAGE sql SECURITY DEFINER
SET search_path = pg_catalog, txnq, pg_temp AS $$
    SELECT txnq.compaction_begin_v3(p_source)
$$;

-- compaction_tables_v2: the source and target tables of a compaction, checked.
-- Errors: TQ005 the target is not a compaction in progress of a sealed log.
CREATE OR REPLACE FUNCTION txnq.compaction_tables_v2(
    p_target integer, OUT source_id integer, OUT source_table text, OUT target_table text
)
LANGUAGE plpgsql STABLE AS $$
BEGIN
    SELECT s.entry_log_id, s.table_name, t.table_name INTO source_id, source_table, target_table
      FROM txnq.entry_logs t JOIN txnq.entry_logs s ON s.entry_log_id = t.compacted_from
     WHERE t.entry_log_id = p_target AND t.state = 'COMPACTING' AND s.state = 'SEALED';
    IF NOT FOUND OR source_table !~ '^entries_[0-9]+$' OR target_table !~ '^entries_[0-9]+$' THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('entry log %s is not a compaction in progress of a sealed entry log',
                             coalesce(p_target::text, 'NULL')),
            HINT = 'pass the entry_log_id that compaction_begin_v2 returned (a COMPACTING log)';
    END IF;
END;
$$;

-- compaction_last_key_v2: the last key copied into a compaction target (the
-- copy goes in key order, so an interrupted one resumes after it); no row when
-- the target is empty.
-- Errors: TQ005 the target is not a compaction in progress.
CREATE OR REPLACE FUNCTION txnq.compaction_last_key_v2(
    p_target integer, OUT topic_id integer, OUT partition integer, OUT entry_offset bigint
)
RETURNS SETOF record
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v record;
BEGIN
    SELECT * INTO v FROM txnq.compaction_tables_v2(p_target);
    RETURN QUERY EXECUTE format(
        'SELECT t.topic_id, t.partition, t.entry_offset FROM txnq.%I t
          ORDER BY t.topic_id DESC, t.partition DESC, t.entry_offset DESC LIMIT 1', v.target_table);
END;
$$;

-- compaction_copy_v2: copy the next chunk of live rows (their ledger is not
-- DELETED; a row without a ledger row counts as live) of the source, in key
-- order after (p_after_topic, p_after_partition, p_after_offset), into the
-- target: at most p_max_rows rows and, past the first row, p_max_bytes payload
-- bytes. Returns what it copied and the last key; rows = 0: done.
-- The key starts at (-1, -1, -1) and resumes after the target's last key
-- (compaction_last_key_v2), never behind it.
-- Errors: TQ005 an argument is NULL, a budget is below 1, the key is behind
--   the target's last key, or the target is not a compaction in progress.
CREATE OR REPLACE FUNCTION txnq.compaction_copy_v2(
    p_target integer,
    p_after_topic integer,
    p_after_partition integer,
    p_after_offset bigint,
    p_max_rows integer,
    p_max_bytes bigint,
    OUT rows bigint,
    OUT bytes bigint,
    OUT last_topic integer,
    OUT last_partition integer,
    OUT last_offset bigint
)
LANGUAGE plpgsql AS $$
DECLARE
    v record;
    v_last record;
BEGIN
    IF p_after_topic IS NULL OR p_after_partition IS NULL OR p_after_offset IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('compaction_copy_v2: the key to copy after (%s, %s, %s) has no NULL part',
                             coalesce(p_after_topic::text, 'NULL'), coalesce(p_after_partition::text, 'NULL'),
                             coalesce(p_after_offset::text, 'NULL')),
            HINT = 'start at (-1, -1, -1), then pass the last key the previous chunk returned';
    END IF;
    IF p_max_rows IS NULL OR p_max_rows < 1 OR p_max_bytes IS NULL OR p_max_bytes < 1 THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('compaction_copy_v2: a chunk is at least 1 row and 1 byte, not %s rows'
                             ' and %s bytes', coalesce(p_max_rows::text, 'NULL'),
                             coalesce(p_max_bytes::text, 'NULL')),
            HINT = 'pass the chunk''s budget in rows and payload bytes (the first row always goes)';
    END IF;
    SELECT * INTO v FROM txnq.compaction_tables_v2(p_target);
    EXECUTE format('SELECT t.topic_id, t.partition, t.entry_offset FROM txnq.%I t
                     ORDER BY t.topic_id DESC, t.partition DESC, t.entry_offset DESC LIMIT 1',
                   v.target_table)
      INTO v_last;
    IF v_last.topic_id IS NOT NULL
       AND (p_after_topic, p_after_partition, p_after_offset)
           < (v_last.topic_id, v_last.partition, v_last.entry_offset) THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('compaction %s has copied up to (%s, %s, %s): it cannot copy again after'
                             ' (%s, %s, %s)', p_target, v_last.topic_id, v_last.partition,
                             v_last.entry_offset, p_after_topic, p_after_partition, p_after_offset),
            HINT = 'resume after the target''s last key (txnq.compaction_last_key_v2)';
    END IF;
    EXECUTE format(
        'WITH chunk AS (
             SELECT e.*, sum(e.payload_bytes) OVER (ORDER BY e.topic_id, e.partition, e.entry_offset) AS run
               FROM txnq.%1$I e
              WHERE (e.topic_id, e.partition, e.entry_offset) > ($1, $2, $3)
                AND NOT EXISTS (SELECT 1 FROM txnq.ledgers dl
                                 WHERE dl.topic_id = e.topic_id AND dl.partition = e.partition
                                   AND dl.ledger_id = e.ledger_id AND dl.state = ''DELETED'')
              ORDER BY e.topic_id, e.partition, e.entry_offset
              LIMIT $4),
         moved AS (
             INSERT INTO txnq.%2$I (%3$s, entry_log_id)
             SELECT %4$s, %5$s FROM chunk e WHERE e.run - e.payload_bytes < $5
             RETURNING topic_id, partition, entry_offset, payload_bytes)
         SELECT count(*), coalesce(sum(m.payload_bytes), 0)::bigint,
                (array_agg(m.topic_id ORDER BY m.topic_id DESC, m.partition DESC, m.entry_offset DESC))[1],
                (array_agg(m.partition ORDER BY m.topic_id DESC, m.partition DESC, m.entry_offset DESC))[1],
                (array_agg(m.entry_offset ORDER BY m.topic_id DESC, m.partition DESC, m.entry_offset DESC))[1]
           FROM moved m',
        v.source_table, v.target_table, txnq.compaction_columns_v1(''),
        txnq.compaction_columns_v1('e.'), p_target)
      INTO rows, bytes, last_topic, last_partition, last_offset
     USING p_after_topic, p_after_partition, p_after_offset, p_max_rows, p_max_bytes;
END;
$$;

-- compaction_catch_up_v2: copy the live rows of the source that the target
-- lacks wherever they are in key order (an append that landed in the source
-- after the copy passed its key), and count the source's rows, first: every
-- row counted is then copied (a later statement sees it), and a row appended
-- after the count makes the swap's count differ. The count is recorded on the
-- target (entry_logs.compaction_source_rows) for compaction_swap_v2. Reads
-- both tables whole; runs before the swap, outside its lock.
-- Errors: TQ005 the target is not a compaction in progress.
CREATE OR REPLACE FUNCTION txnq.compaction_catch_up_v2(
    p_target integer, OUT copied bigint, OUT source_rows bigint
)
LANGUAGE plpgsql AS $$
DECLARE
    v record;
BEGIN
    SELECT * INTO v FROM txnq.compaction_tables_v2(p_target);
    EXECUTE format('SELECT count(*) FROM txnq.%I', v.source_table) INTO source_rows;
    EXECUTE format(
        'INSERT INTO txnq.%2$I (%3$s, entry_log_id)
         SELECT %4$s, %5$s FROM txnq.%1$I e
          WHERE NOT EXISTS (SELECT 1 FROM txnq.ledgers dl
                             WHERE dl.topic_id = e.topic_id AND dl.partition = e.partition
                               AND dl.ledger_id = e.ledger_id AND dl.state = ''DELETED'')
            AND NOT EXISTS (SELECT 1 FROM txnq.%2$I t
                             WHERE t.topic_id = e.topic_id AND t.partition = e.partition
                               AND t.entry_offset = e.entry_offset)',
        v.source_table, v.target_table, txnq.compaction_columns_v1(''),
        txnq.compaction_columns_v1('e.'), p_target);
    GET DIAGNOSTICS copied = ROW_COUNT;
    UPDATE txnq.entry_logs l SET compaction_source_rows = source_rows WHERE l.entry_log_id = p_target;
END;
$$;

-- compaction_swap_v2: in the caller's one transaction, detach the source,
-- attach the target and drop the source. p_source_rows is the source's row
-- count that compaction_catch_up_v2 returned (and recorded): if a row arrived
-- since (it cannot once a log has been sealed for the grace period, but GC
-- never drops what it has not accounted for), the live rows the target lacks
-- are copied here, under the lock.
-- Locks: ACCESS EXCLUSIVE on txnq.entries for the detach (waits for running
--   statements on entries, and new ones wait for it, up to p_lock_timeout,
--   1 ms to 60 s; then TQ020 and nothing changed; txnq.lifecycle reports the
--   log as busy and the next run resumes), held only until the caller commits.
-- Returns the rows copied under the lock (normally 0).
-- Errors: TQ005 the target is not a compaction in progress, its catch-up has
--   not run or counted otherwise, or the lock timeout is not a duration from
--   1 ms to 60 s; TQ020 busy.
CREATE OR REPLACE FUNCTION txnq.compaction_swap_v2(
    p_target integer, p_source_rows bigint, p_lock_timeout text DEFAULT '2s'
)
RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    v record;
    v_counted bigint;
    v_timeout_ms bigint;
    v_rows bigint;
    v_late bigint := 0;
BEGIN
    SELECT * INTO v FROM txnq.compaction_tables_v2(p_target);
    SELECT l.compaction_source_rows INTO v_counted FROM txnq.entry_logs l WHERE l.entry_log_id = p_target;
    IF v_counted IS NULL OR p_source_rows IS DISTINCT FROM v_counted THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = CASE WHEN v_counted IS NULL
                           THEN format('compaction %s has not caught up with its source yet', p_target)
                           ELSE format('compaction %s: its catch-up counted %s source rows, not %s',
                                       p_target, v_counted, coalesce(p_source_rows::text, 'NULL')) END,
            HINT = 'run txnq.compaction_catch_up_v2 and pass the source_rows it returns';
    END IF;
    -- The timeout as PostgreSQL reads it (units, rounding), then its value in ms.
    IF p_lock_timeout IS NOT NULL THEN
        BEGIN
            PERFORM set_config('lock_timeout', p_lock_timeout, true);
            SELECT s.setting::bigint INTO v_timeout_ms FROM pg_settings s WHERE s.name = 'lock_timeout';
        EXCEPTION WHEN invalid_parameter_value THEN
            v_timeout_ms := NULL;
        END;
    END IF;
    IF v_timeout_ms IS NULL OR v_timeout_ms < 1 OR v_timeout_ms > 60000 THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('compaction_swap_v2: the lock timeout must be from 1ms to 60s, not %L',
                             p_lock_timeout),
            HINT = 'pass a duration such as ''2s'': appends and fetches queue behind the swap while it waits';
    END IF;
    BEGIN
        EXECUTE format('ALTER TABLE txnq.entries DETACH PARTITION txnq.%I', v.source_table);
    EXCEPTION WHEN lock_not_available THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ020',
            MESSAGE = format('entry log %s is busy (readers or appends held txnq.entries for %s)',
                             v.source_id, p_lock_timeout),
            HINT = 'the compaction is kept and resumes at the next GC run';
    END;
    EXECUTE format('SELECT count(*) FROM txnq.%I', v.source_table) INTO v_rows;
    IF v_rows <> v_counted THEN
        SELECT c.copied INTO v_late FROM txnq.compaction_catch_up_v2(p_target) c;
    END IF;
    EXECUTE format('ALTER TABLE txnq.entries ATTACH PARTITION txnq.%I FOR VALUES IN (%s)',
                   v.target_table, p_target);
    EXECUTE format('DROP TABLE txnq.%I', v.source_table);
    UPDATE txnq.entry_logs SET state = 'DROPPED', dropped_at = now() WHERE entry_log_id = v.source_id;
    UPDATE txnq.entry_logs SET state = 'SEALED', sealed_at = now() WHERE entry_log_id = p_target;
    RETURN v_late;
END;
$$;

-- compaction_abandon_v2: drop a compaction target that will not be finished
-- (its source was dropped meanwhile, or a dry look decided against it).
-- Idempotent: a log that is no longer COMPACTING is left alone.
-- Errors: TQ005 the target is NULL or no entry log at all.
CREATE OR REPLACE FUNCTION txnq.compaction_abandon_v2(p_target integer)
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_table text;
    v_state text;
BEGIN
    SELECT l.table_name, l.state INTO v_table, v_state FROM txnq.entry_logs l
     WHERE l.entry_log_id = p_target FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('entry log %s does not exist', coalesce(p_target::text, 'NULL')),
            HINT = 'pass the entry_log_id of a COMPACTING log (txnq.entry_log_status)';
    END IF;
    IF v_state <> 'COMPACTING' OR v_table !~ '^entries_[0-9]+$' THEN
        RETURN;
    END IF;
    EXECUTE format('DROP TABLE IF EXISTS txnq.%I', v_table);
    UPDATE txnq.entry_logs SET state = 'DROPPED', dropped_at = now() WHERE entry_log_id = p_target;
END;
$$;
