-- txnq.spark_ingestion_get_v1: an incremental ingestion's state by name
-- (txnq.spark_ingestions), for a role allowed to consume its topic.
-- Revision 0015.
--
-- Parameters: name. Returns one row, none when there is no such ingestion.
-- Locks: none. Errors: TQ018 without consume on its topic.
CREATE OR REPLACE FUNCTION txnq.spark_ingestion_get_v1(p_name text)
RETURNS TABLE (name text, topic_id integer, committed_run bigint, committed_offsets bigint[],
               planned_run bigint, planned_offsets bigint[], updated_at timestamptz)
LANGUAGE sql STABLE AS $$
    SELECT txnq.authorize_v1(i.topic_id, 'consume') FROM txnq.spark_ingestions i WHERE i.name = p_name;
    SELECT i.name, i.topic_id, i.committed_run, i.committed_offsets, i.planned_run, i.planned_offsets,
           i.updated_at
      FROM txnq.spark_ingestions i WHERE i.name = p_name;
$$;
