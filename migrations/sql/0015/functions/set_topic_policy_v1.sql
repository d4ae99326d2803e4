-- txnq.set_topic_policy_v1: change a topic's retention and TTL
-- (Admin.update_topic). Replaces the client's direct UPDATE of txnq.topics.
-- Revision 0015.
--
-- Parameters: topic_id; retention_seconds (NULL: unchanged; -1 forever, else
--   0 to 3155760000, 100 years), retention_bytes (NULL: unchanged; -1
--   unlimited, else >= 0), ttl_seconds (NULL: unchanged; else above 0 and at
--   most 100 years), clear_ttl (true: remove the TTL). The bounds of
--   create_topic_v2: longer is "forever" for every purpose.
-- Returns nothing. Locks: the topic row.
-- Errors: TQ005 for a value out of range (NaN, ±Infinity included); TQ001 /
--   TQ018 without admin on the topic.
CREATE OR REPLACE FUNCTION txnq.set_topic_policy_v1(
    p_topic_id integer, p_retention_seconds double precision, p_retention_bytes bigint,
    p_ttl_seconds double precision, p_clear_ttl boolean
)
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    c_max_seconds CONSTANT double precision := 3155760000;  -- 100 years, as create_topic_v2
BEGIN
    PERFORM txnq.authorize_v1(p_topic_id, 'admin');
    PERFORM txnq.require_number_v1('retention_seconds', p_retention_seconds, -1, c_max_seconds, true);
    PERFORM txnq.require_number_v1('retention_bytes', p_retention_bytes, -1, NULL, true);
    PERFORM txnq.require_number_v1('ttl_seconds', p_ttl_seconds, 0, c_max_seconds, true);
    IF p_retention_seconds < 0 AND p_retention_seconds <> -1 THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('retention_seconds must be -1 (forever) or at least 0, not %s', p_retention_seconds);
    END IF;
    IF p_ttl_seconds = 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = 'ttl_seconds must be above 0: pass clear_ttl => true to remove the TTL';
    END IF;
    IF p_clear_ttl IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005', MESSAGE = 'clear_ttl must be true or false, not NULL';
    END IF;
    UPDATE txnq.topics
       SET retention_seconds = coalesce(p_retention_seconds, retention_seconds),
           retention_bytes = coalesce(p_retention_bytes, retention_bytes),
           ttl_seconds = CASE WHEN p_clear_ttl THEN NULL ELSE coalesce(p_ttl_seconds, ttl_seconds) END
     WHERE topic_id = p_topic_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ001',
            MESSAGE = format('topic id %s does not exist', coalesce(p_topic_id::text, 'NULL'));
    END IF;
END;
$$;
