-- txnq.spark_ingestion_plan_v1: record the range a run of an ingestion is
-- about to write; only when no plan is pending. Revision 0015.
--
-- Parameters: name, planned_offsets: per partition of the ingestion's topic
--   (index 1: partition 0; at most one per partition it has, at least one per
--   partition the committed position covers: partitions are only ever added,
--   maybe since the run looked), the last offset the run covers: from the
--   committed position of that partition
--   (-1: nothing yet) to its max read offset. A plan below the committed
--   position would deliver messages twice; one past the max read offset would
--   record as delivered what no reader could read yet (or was never appended).
-- Returns the planned run's number, none when a plan is pending (or no such
--   ingestion). Locks: the ingestion's row.
-- Errors: TQ005 offsets that are NULL, too many or too few, or out of that
--   range; TQ001 the ingestion's topic was deleted; TQ018 without consume on
--   its topic.
CREATE OR REPLACE FUNCTION txnq.spark_ingestion_plan_v1(p_name text, p_planned_offsets bigint[])
RETURNS SETOF bigint
LANGUAGE plpgsql AS $$
DECLARE
    i record;
    v_partitions integer;
    v_bad text;
BEGIN
    IF p_planned_offsets IS NULL OR array_ndims(p_planned_offsets) IS DISTINCT FROM 1
       OR array_lower(p_planned_offsets, 1) <> 1
       OR array_position(p_planned_offsets, NULL) IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('planned_offsets %s are not valid: give a one-dimensional array of '
                             'offsets without NULL, one per partition',
                             coalesce(left(p_planned_offsets::text, 80), 'NULL')),
            HINT = 'nothing was planned';
    END IF;
    SELECT s.topic_id, s.committed_offsets, s.planned_run INTO i
      FROM txnq.spark_ingestions s WHERE s.name = p_name FOR UPDATE;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    PERFORM txnq.authorize_v1(i.topic_id, 'consume');
    IF i.planned_run IS NOT NULL THEN
        RETURN;
    END IF;
    SELECT t.partitions INTO v_partitions FROM txnq.topics t WHERE t.topic_id = i.topic_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ001',
            MESSAGE = format('the topic of ingestion %s (topic id %s) does not exist any more',
                             quote_literal(p_name), i.topic_id),
            HINT = 'drop the ingestion (txnq.spark.drop_ingestion) and start a new one';
    END IF;
    IF cardinality(p_planned_offsets) > v_partitions
       OR cardinality(p_planned_offsets) < coalesce(cardinality(i.committed_offsets), 0) THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('planned_offsets has %s elements: the topic has %s partitions, and the '
                             'committed position covers %s', cardinality(p_planned_offsets),
                             v_partitions, coalesce(cardinality(i.committed_offsets), 0)),
            HINT = 'give one offset per partition; nothing was planned';
    END IF;
    SELECT format('partition %s: %s is not from %s (the committed position) to %s (its max read offset)',
                  h.partition, p_planned_offsets[h.partition + 1],
                  coalesce(i.committed_offsets[h.partition + 1], -1), h.max_read_offset)
      INTO v_bad
      FROM txnq.partitions h
     WHERE h.topic_id = i.topic_id
       AND (p_planned_offsets[h.partition + 1] < coalesce(i.committed_offsets[h.partition + 1], -1)
            OR p_planned_offsets[h.partition + 1] > h.max_read_offset)
     ORDER BY h.partition LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('planned_offsets out of range: %s', v_bad),
            HINT = 'plan from the committed position to at most the max read offsets; nothing was planned';
    END IF;
    RETURN QUERY
    UPDATE txnq.spark_ingestions s
       SET planned_run = s.committed_run + 1, planned_offsets = p_planned_offsets, updated_at = now()
     WHERE s.name = p_name
    RETURNING s.planned_run;
END;
$$;
