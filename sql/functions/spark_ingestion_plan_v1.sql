-- txnq.spark_ingestion_plan_v1: record the range a run of an ingestion is
-- about to write; only when no plan is pending. Revision 0015.
--
-- Parameters: name, planned_offsets (the end offset per partition).
-- Returns the planned run's number, none when a plan is pending (or no such
--   ingestion). Locks: the ingestion's row.
-- Errors: TQ018 without consume on its topic.
CREATE OR REPLACE FUNCTION txnq.spark_ingestion_plan_v1(p_name text, p_planned_offsets bigint[])
RETURNS SETOF bigint
LANGUAGE sql AS $$
    SELECT txnq.authorize_v1(i.topic_id, 'consume') FROM txnq.spark_ingestions i WHERE i.name = p_name;
    UPDATE txnq.spark_ingestions
       SET planned_run = committed_run + 1, planned_offsets = p_planned_offsets, updated_at = now()
     WHERE name = p_name AND planned_run IS NULL
    RETURNING planned_run;
$$;
