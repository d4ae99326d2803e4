-- txnq.compaction_begin_v3: the compaction target of a sealed entry log: the
-- one already COMPACTING (a run that ran out of time or died resumes it), or a
-- new empty table with the indexes of txnq.entries and a CHECK that lets
-- ATTACH skip its scan. Revision 0023: compaction_begin_v2 (compaction_v2.sql,
-- now its wrapper) whose new table takes the compression of txnq.entries'
-- columns too (LIKE ... INCLUDING COMPRESSION: lz4 where the server has it,
-- roll_entry_log_v3 says why). The other steps of a compaction stay in
-- compaction_v2.sql.
-- Runs as its owner (SECURITY DEFINER, as v1: revision 0007).
-- Locks: the source's entry_logs row; the advisory lock roll_entry_log_v3
--   takes, so the two never pick the same id.
-- Errors: TQ005 the source is NULL or not a sealed entry log.
CREATE OR REPLACE FUNCTION txnq.compaction_begin_v3(p_source integer)
RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, txnq, pg_temp AS $$
DECLARE
    v_state text;
    v_target integer;
    v_table text;
BEGIN
    SELECT l.state INTO v_state FROM txnq.entry_logs l WHERE l.entry_log_id = p_source FOR UPDATE;
    IF v_state IS DISTINCT FROM 'SEALED' THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('entry log %s is %s: only a sealed entry log is compacted',
                             coalesce(p_source::text, 'NULL'), coalesce(lower(v_state), 'missing')),
            HINT = 'pass the entry_log_id of a SEALED log (txnq.entry_log_status)';
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
                   'INCLUDING STORAGE INCLUDING COMPRESSION, CONSTRAINT %I CHECK (entry_log_id = %s))',
                   v_table, v_table || '_log', v_target);
    EXECUTE format('ALTER TABLE txnq.%I ADD PRIMARY KEY (topic_id, partition, entry_offset, entry_log_id)',
                   v_table);
    EXECUTE format('CREATE INDEX %I ON txnq.%I USING brin (publish_time)', v_table || '_publish_time', v_table);
    INSERT INTO txnq.entry_logs (entry_log_id, table_name, state, compacted_from)
    VALUES (v_target, v_table, 'COMPACTING', p_source);
    RETURN v_target;
END;
$$;
