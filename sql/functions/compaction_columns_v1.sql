-- txnq.compaction_columns_v1: installed by revision 0004
-- (functions/compaction_v1.sql); revision 0017 moved it to a file of its own,
-- unchanged.
--
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
