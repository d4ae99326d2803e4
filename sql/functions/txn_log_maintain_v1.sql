-- txnq.txn_log_maintain_v1: keep txnq.txn_log's time partitions (revision
-- 0020): make the partitions of the current period and of p_ahead periods
-- after it, and drop the partitions that ended more than p_keep_seconds ago
-- and hold no row of a transaction that still exists (the history purge
-- deletes finished transactions after FINISHED_TXN_RETENTION_SECONDS, so a
-- partition goes once its last transaction has). Run by the scheduler's
-- purge_history job before the purge (docs/lifecycle.md).
--
-- Partitions are named txn_log_<start, UTC, yyyymmddThhmmss> and cover
-- [start, start + p_partition_seconds); the periods are aligned to the Unix
-- epoch. Only periods starting at least half a period (at most a minute)
-- from now are made (the body says why); a period that would overlap an
-- existing partition (the width was changed) is skipped. Rows of a period
-- without a partition land in txn_log_default, which the history purge
-- cleans row by row (right after the upgrade: until the first period made
-- ahead begins).
--
-- Parameters: partition_seconds (1 s, for tests and the soak, to 31 days),
--   ahead (0 .. 100 periods), keep_seconds (> 0, at most 1e9).
-- Returns one row per partition made or dropped: action ('created' or
--   'dropped'), partition (its name).
-- Locks: SHARE UPDATE EXCLUSIVE on txnq.txn_log and ACCESS EXCLUSIVE on
--   txn_log_default to attach (the default's rows are checked), ACCESS
--   EXCLUSIVE on txnq.txn_log to detach (transactions' state changes wait
--   behind it); each waits at most 100 ms, then the partition is left for
--   the next run.
-- Errors: TQ005 an argument NULL or out of range.
CREATE OR REPLACE FUNCTION txnq.txn_log_maintain_v1(
    p_partition_seconds double precision,
    p_ahead integer,
    p_keep_seconds double precision
)
RETURNS TABLE (action text, partition_name text)
LANGUAGE plpgsql AS $$
DECLARE
    v_start timestamptz;
    v_lo timestamptz;
    v_hi timestamptz;
    v_name text;
    v_live boolean;
    r record;
BEGIN
    IF p_partition_seconds IS NULL OR p_ahead IS NULL OR p_keep_seconds IS NULL
       OR NOT (p_partition_seconds >= 1 AND p_partition_seconds <= 31 * 86400)
       OR p_ahead < 0 OR p_ahead > 100
       OR NOT (p_keep_seconds > 0 AND p_keep_seconds <= 1e9) THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('txn_log_maintain_v1: partition_seconds (%s) must be from 1 to 2678400, '
                             'ahead (%s) from 0 to 100, keep_seconds (%s) more than 0 and at most 1e9',
                             coalesce(p_partition_seconds::text, 'NULL'), coalesce(p_ahead::text, 'NULL'),
                             coalesce(p_keep_seconds::text, 'NULL')),
            HINT = 'TXN_LOG_PARTITION_SECONDS and FINISHED_TXN_RETENTION_SECONDS give them';
    END IF;
    PERFORM set_config('lock_timeout', '100ms', true);
    v_start := to_timestamp(floor(extract(epoch FROM now()) / p_partition_seconds) * p_partition_seconds);
    FOR i IN 0 .. p_ahead + 1 LOOP
        v_lo := v_start + make_interval(secs => i * p_partition_seconds);
        v_hi := v_lo + make_interval(secs => p_partition_seconds);
        -- Only periods that start in the future (by half a period, at most a
        -- minute): an insert routes its row with the partitions it saw when
        -- it started, so attaching the range it is writing into would send
        -- its row to txn_log_default, which the new range no longer allows
        -- (a check violation in the writer's transaction). A period missed
        -- that way keeps its rows in txn_log_default.
        CONTINUE WHEN v_lo < clock_timestamp() + make_interval(secs => least(60, p_partition_seconds / 2));
        v_name := 'txn_log_' || to_char(v_lo AT TIME ZONE 'UTC', 'YYYYMMDD"T"HH24MISS');
        CONTINUE WHEN to_regclass(format('txnq.%I', v_name)) IS NOT NULL;
        BEGIN
            EXECUTE format('CREATE TABLE txnq.%I (LIKE txnq.txn_log INCLUDING DEFAULTS)', v_name);
            EXECUTE format('ALTER TABLE txnq.txn_log ATTACH PARTITION txnq.%I FOR VALUES FROM (%L) TO (%L)',
                           v_name, v_lo, v_hi);
            action := 'created'; partition_name := v_name;
            RETURN NEXT;
        EXCEPTION WHEN invalid_object_definition OR check_violation OR lock_not_available THEN
            -- Overlaps a partition of another width, the default already holds
            -- rows of it (a clock set back), or busy: its rows go to the default.
            NULL;
        END;
    END LOOP;
    FOR r IN
        SELECT c.relname,
               substring(pg_get_expr(c.relpartbound, c.oid) FROM 'TO \(''([^'']+)''\)')::timestamptz AS hi
          FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
         WHERE i.inhparent = 'txnq.txn_log'::regclass AND c.relname <> 'txn_log_default'
    LOOP
        CONTINUE WHEN r.hi IS NULL OR r.hi >= now() - make_interval(secs => p_keep_seconds);
        BEGIN
            EXECUTE format('SELECT EXISTS (SELECT 1 FROM txnq.%I l JOIN txnq.transactions t '
                           'ON t.tc_id = l.tc_id AND t.txn_seq = l.txn_seq)', r.relname) INTO STRICT v_live;
            CONTINUE WHEN v_live;
            EXECUTE format('ALTER TABLE txnq.txn_log DETACH PARTITION txnq.%I', r.relname);
            EXECUTE format('DROP TABLE txnq.%I', r.relname);
            action := 'dropped'; partition_name := r.relname;
            RETURN NEXT;
        EXCEPTION WHEN lock_not_available THEN
            NULL;  -- busy: the next run
        END;
    END LOOP;
END;
$$;
