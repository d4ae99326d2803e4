-- txnq.spark_ingestion_list_v1: the incremental ingestions on topics the
-- caller may see. Revision 0015.
--
-- Parameters: none. Returns rows by name. Locks: none. Errors: none.
CREATE OR REPLACE FUNCTION txnq.spark_ingestion_list_v1()
RETURNS TABLE (name text, topic text, committed_run bigint, committed_offsets bigint[],
               planned_run bigint, planned_offsets bigint[], updated_at timestamptz)
LANGUAGE sql STABLE AS $$
    SELECT i.name, t.name, i.committed_run, i.committed_offsets, i.planned_run, i.planned_offsets,
           i.updated_at
      FROM txnq.spark_ingestions i LEFT JOIN txnq.topics t USING (topic_id)
     WHERE txnq.caller_is_trusted_v1(txnq.caller_v1())
        OR (t.name IS NOT NULL AND txnq.topic_visible_v1(txnq.caller_v1(), t.name))
     ORDER BY i.name;
$$;
