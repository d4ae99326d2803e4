-- Revision 0023: an entry's arrays (payloads, keys, properties, event times)
-- are compressed with lz4 where the server was built with it, and stored
-- uncompressed otherwise, instead of PostgreSQL's default pglz.
--
-- Why: a producer batch is one entry, so a batch of 1,000 messages of 100
-- bytes is one ~100 kB row whose arrays are TOASTed. pglz spends about 2 ms
-- on such a row even when it cannot compress it (random or already
-- compressed payloads: it gives up late), more than the rest of the append;
-- lz4 gives up early on incompressible data and compresses JSON about as well
-- at a fraction of the cost (docs/benchmarks.md has the figures). Without lz4
-- (the embedded PostgreSQL wheel is built without it) the arrays are stored
-- uncompressed (STORAGE EXTERNAL), as Kafka and Pulsar store a batch unless
-- the producer compresses it.
--
-- Every entry log is altered (the partitioned table's setting does not reach
-- its existing partitions); existing rows keep their compression until GC
-- compacts them. New entry logs copy it: roll_entry_log_v3 and
-- compaction_begin_v3 create them LIKE txnq.entries INCLUDING COMPRESSION.
DO $$
DECLARE
    -- Every entry log: ALTER TABLE ... SET COMPRESSION on a partitioned table
    -- does not reach its existing partitions (PostgreSQL 15), and a compaction
    -- target is not attached yet. Names come from pg_class, quoted with %I.
    v_table text;
    v_setting text := 'SET COMPRESSION lz4';
BEGIN
    BEGIN
        ALTER TABLE txnq.entries ALTER COLUMN payloads SET COMPRESSION lz4;
    EXCEPTION WHEN feature_not_supported THEN  -- 'compression method lz4 not supported'
        v_setting := 'SET STORAGE EXTERNAL';
    END;
    FOR v_table IN
        SELECT c.relname FROM pg_catalog.pg_class c
         WHERE c.relnamespace = 'txnq'::regnamespace AND c.relkind IN ('r', 'p')
           AND (c.relname = 'entries' OR c.relname ~ '^entries_[0-9]+$')
         ORDER BY c.relname
    LOOP
        EXECUTE format('ALTER TABLE ONLY txnq.%I ALTER COLUMN payloads %s, ALTER COLUMN keys %s, '
                       'ALTER COLUMN properties %s, ALTER COLUMN event_times %s',
                       v_table, v_setting, v_setting, v_setting, v_setting);
    END LOOP;
END
$$;
