-- txnq.spark_ingestion_commit_v1: the sink has a run's planned range: it
-- becomes the ingestion's committed position. Revision 0015.
--
-- Parameters: name, run (the planned run).
-- Returns the committed run, none when that run is not the planned one.
-- Locks: the ingestion's row. Errors: TQ018 without consume on its topic.
CREATE OR REPLACE FUNCTION txnq.spark_ingestion_commit_v1(p_name text, p_run bigint)
RETURNS SETOF bigint
LANGUAGE sql AS $$
    SELECT txnq.authorize_v1(i.topic_id, 'consume') FROM txnq.spark_ingestions i WHERE i.name = p_name;
    UPDATE txnq.spark_ingestions
       SET committed_run = planned_run, committed_offsets = planned_offsets,
           planned_run = NULL, planned_offsets = NULL, updated_at = now()
     WHERE name = p_name AND planned_run = p_run
    RETURNING committed_run;
$$;
