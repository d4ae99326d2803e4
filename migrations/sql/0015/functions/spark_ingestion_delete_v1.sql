-- txnq.spark_ingestion_delete_v1: forget an incremental ingestion.
-- Revision 0015.
--
-- Parameters: name. Returns the name, none when there was no such ingestion.
-- Locks: the row it deletes. Errors: TQ018 without consume on its topic.
CREATE OR REPLACE FUNCTION txnq.spark_ingestion_delete_v1(p_name text)
RETURNS SETOF text
LANGUAGE sql AS $$
    SELECT txnq.authorize_v1(i.topic_id, 'consume') FROM txnq.spark_ingestions i WHERE i.name = p_name;
    DELETE FROM txnq.spark_ingestions WHERE name = p_name RETURNING name;
$$;
