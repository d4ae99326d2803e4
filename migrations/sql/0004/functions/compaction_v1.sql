-- Entry-log compaction (txnq/lifecycle.py, docs/lifecycle.md): the live rows
-- of a sealed entry log whose live share is under the GC threshold move to a
-- new entry log, and the old one is dropped.
--
-- The design is BookKeeper's transactional compaction: live entries are
-- written to a separate compaction log, and only when it is complete does the
-- switch happen. Here the compaction log is a new PostgreSQL table, created
-- detached (no reader sees it) and filled by compaction_copy_v1 in short,
-- throttled transactions; compaction_swap_v1 then, in ONE transaction,
-- detaches and drops the source and attaches the target. A reader's statement
-- runs before that transaction (it sees the source rows) or after it (it sees
-- the target rows): never both, never neither. So every live row stays
-- readable, exactly once, at every moment.
--
-- (DESIGN.md says "live rows move to the active log". Copying into the active
-- log would make each row visible twice, in the source and the active log,
-- from the copy's commit until the source is detached, or would force the
-- whole copy into one long transaction holding back vacuum. A fresh log that
-- becomes visible in the same transaction that hides the source has neither
-- problem; the new log is SEALED and GC treats it like any other.)
--
-- Table names come from integer ids only (entries_NNNNNN), quoted with %I.

-- compaction_begin_v1: the compaction target of a sealed entry log: the one
-- already COMPACTING (a run that ran out of time or died resumes it), or a new
-- empty table with the indexes of txnq.entries and a CHECK that lets ATTACH
-- skip its scan.
-- Locks: the source's entry_logs row; the advisory lock roll_entry_log_v1
--   takes, so the two never pick the same id.
-- Errors: TQ005 the source is not a sealed entry log.
CREATE OR REPLACE FUNCTION txnq.compaction_begin_v1(p_source integer)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    v_state text;
    v_target integer;
    v_table text;
BEGIN
    SELECT l.state INTO v_state FROM txnq.entry_logs l WHERE l.entry_log_id = p_source FOR UPDATE;
    IF v_state IS DISTINCT FROM 'SEALED' THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('entry log %s is %s: only a sealed entry log is compacted',
                             p_source, coalesce(lower(v_state), 'missing'));
    END IF;
    SELECT l.entry_log_id INTO v_target FROM txnq.entry_logs l
     WHERE l.state = 'COMPACTING' AND l.compacted_from = p_source;
    IF FOUND THEN
        RETURN v_target;
    END IF;
    PERFORM pg_advisory_xact_lock(hashtext('txnq.roll_entry_log'));
    SELECT max(l.entry_log_id) + 1 INTO v_target FROM txnq.entry_logs l;
    v_table := format('entries_%s', lpad(v_target::text, 6, '0'));
    EXECUTE format('CREATE TABLE txnq.%I (LIKE txnq.entries INCLUDING DEFAULTS INCLUDING CONSTRAINTS '
                   'INCLUDING STORAGE, CONSTRAINT %I CHECK (entry_log_id = %s))',
                   v_table, v_table || '_log', v_target);
    EXECUTE format('ALTER TABLE txnq.%I ADD PRIMARY KEY (topic_id, partition, entry_offset, entry_log_id)',
                   v_table);
    EXECUTE format('CREATE INDEX %I ON txnq.%I USING brin (publish_time)', v_table || '_publish_time', v_table);
    INSERT INTO txnq.entry_logs (entry_log_id, table_name, state, compacted_from)
    VALUES (v_target, v_table, 'COMPACTING', p_source);
    RETURN v_target;
END;
$$;

-- _compaction_tables_v1: the source and target tables of a compaction, checked.
CREATE OR REPLACE FUNCTION txnq.compaction_tables_v1(
    p_target integer, OUT source_id integer, OUT source_table text, OUT target_table text
)
LANGUAGE plpgsql STABLE AS $$
BEGIN
    SELECT s.entry_log_id, s.table_name, t.table_name INTO source_id, source_table, target_table
      FROM txnq.entry_logs t JOIN txnq.entry_logs s ON s.entry_log_id = t.compacted_from
     WHERE t.entry_log_id = p_target AND t.state = 'COMPACTING' AND s.state = 'SEALED';
    IF NOT FOUND OR source_table !~ '^entries_[0-9]+$' OR target_table !~ '^entries_[0-9]+$' THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('entry log %s is not a compaction in progress of a sealed entry log', p_target);
    END IF;
END;
$$;

-- compaction_columns_v1: the columns of txnq.entries but entry_log_id, quoted,
-- as "e.a, e.b, ..." (p_prefix 'e.') or "a, b, ..." (''): the copy follows
-- whatever columns a later revision adds.
CREATE OR REPLACE FUNCTION txnq.compaction_columns_v1(p_prefix text)
RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT string_agg(p_prefix || quote_ident(a.attname), ', ' ORDER BY a.attnum)
      FROM pg_attribute a
     WHERE a.attrelid = 'txnq.entries'::regclass AND a.attnum > 0 AND NOT a.attisdropped
       AND a.attname <> 'entry_log_id'
$$;

-- compaction_copy_v1: copy the next chunk of live rows (their ledger is not
-- DELETED; a row without a ledger row counts as live) of the source, in key
-- order after (p_after_topic, p_after_partition, p_after_offset), into the
-- target: at most p_max_rows rows and, past the first row, p_max_bytes payload
-- bytes. Returns what it copied and the last key; rows = 0: done.
CREATE OR REPLACE FUNCTION txnq.compaction_copy_v1(
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
BEGIN
    SELECT * INTO v FROM txnq.compaction_tables_v1(p_target);
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

-- compaction_last_key_v1: the last key copied into a compaction target (the
-- copy goes in key order, so an interrupted one resumes after it); no row when
-- the target is empty.
CREATE OR REPLACE FUNCTION txnq.compaction_last_key_v1(
    p_target integer, OUT topic_id integer, OUT partition integer, OUT entry_offset bigint
)
RETURNS SETOF record
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v record;
BEGIN
    SELECT * INTO v FROM txnq.compaction_tables_v1(p_target);
    RETURN QUERY EXECUTE format(
        'SELECT t.topic_id, t.partition, t.entry_offset FROM txnq.%I t
          ORDER BY t.topic_id DESC, t.partition DESC, t.entry_offset DESC LIMIT 1', v.target_table);
END;
$$;

-- compaction_catch_up_v1: copy the live rows of the source that the target
-- lacks wherever they are in key order (an append that landed in the source
-- after the copy passed its key), and count the source's rows. Reads both
-- tables whole; runs before the swap, outside its lock.
CREATE OR REPLACE FUNCTION txnq.compaction_catch_up_v1(
    p_target integer, OUT copied bigint, OUT source_rows bigint
)
LANGUAGE plpgsql AS $$
DECLARE
    v record;
BEGIN
    SELECT * INTO v FROM txnq.compaction_tables_v1(p_target);
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
    EXECUTE format('SELECT count(*) FROM txnq.%I', v.source_table) INTO source_rows;
END;
$$;

-- compaction_swap_v1: in the caller's one transaction, detach the source,
-- attach the target and drop the source. p_source_rows is the source's row
-- count the catch-up saw: if a row arrived since (it cannot once a log has been
-- sealed for the grace period, but GC never drops what it has not accounted
-- for), the live rows the target lacks are copied here, under the lock.
-- Locks: ACCESS EXCLUSIVE on txnq.entries for the detach (waits for running
--   statements on entries, and new ones wait for it, up to p_lock_timeout;
--   then TQ020 and nothing changed; txnq.lifecycle reports the log as busy and
--   the next run resumes), held only until the caller commits.
-- Returns the rows copied under the lock (normally 0).
CREATE OR REPLACE FUNCTION txnq.compaction_swap_v1(
    p_target integer, p_source_rows bigint, p_lock_timeout text DEFAULT '2s'
)
RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    v record;
    v_rows bigint;
    v_late bigint := 0;
BEGIN
    SELECT * INTO v FROM txnq.compaction_tables_v1(p_target);
    PERFORM set_config('lock_timeout', p_lock_timeout, true);
    BEGIN
        EXECUTE format('ALTER TABLE txnq.entries DETACH PARTITION txnq.%I', v.source_table);
    EXCEPTION WHEN lock_not_available THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ020',
            MESSAGE = format('entry log %s is busy (readers or appends held txnq.entries for %s)',
                             v.source_id, p_lock_timeout),
            HINT = 'the compaction is kept and resumes at the next GC run';
    END;
    EXECUTE format('SELECT count(*) FROM txnq.%I', v.source_table) INTO v_rows;
    IF v_rows <> p_source_rows THEN
        SELECT c.copied INTO v_late FROM txnq.compaction_catch_up_v1(p_target) c;
    END IF;
    EXECUTE format('ALTER TABLE txnq.entries ATTACH PARTITION txnq.%I FOR VALUES IN (%s)',
                   v.target_table, p_target);
    EXECUTE format('DROP TABLE txnq.%I', v.source_table);
    UPDATE txnq.entry_logs SET state = 'DROPPED', dropped_at = now() WHERE entry_log_id = v.source_id;
    UPDATE txnq.entry_logs SET state = 'SEALED', sealed_at = now() WHERE entry_log_id = p_target;
    RETURN v_late;
END;
$$;

-- compaction_abandon_v1: drop a compaction target that will not be finished
-- (its source was dropped meanwhile, or a dry look decided against it).
CREATE OR REPLACE FUNCTION txnq.compaction_abandon_v1(p_target integer)
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_table text;
BEGIN
    SELECT l.table_name INTO v_table FROM txnq.entry_logs l
     WHERE l.entry_log_id = p_target AND l.state = 'COMPACTING' FOR UPDATE;
    IF NOT FOUND OR v_table !~ '^entries_[0-9]+$' THEN
        RETURN;
    END IF;
    EXECUTE format('DROP TABLE IF EXISTS txnq.%I', v_table);
    UPDATE txnq.entry_logs SET state = 'DROPPED', dropped_at = now() WHERE entry_log_id = p_target;
END;
$$;
