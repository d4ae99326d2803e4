-- txnq.set_backlog_quota_v1: change a topic's backlog quota
-- (Admin.update_topic / create_topic). A change clears the topic's
-- over-quota state: the next check decides anew (so raising a quota releases
-- held producers at once). Replaces the client's direct UPDATE. Revision 0015.
--
-- Parameters: topic_id; set_bytes, set_seconds, set_policy (whether to change
--   that value); limit_bytes (NULL: the server default; -1 none, else > 0),
--   limit_seconds (NULL: the default; -1 none, else above 0 and at most
--   3155760000, 100 years, as every duration of txnq), policy (NULL: the
--   default; producer_hold | producer_error | consumer_backlog_eviction).
-- Returns nothing. Locks: the topic row.
-- Errors: TQ005 for a bad value; TQ001 / TQ018 without admin on the topic.
CREATE OR REPLACE FUNCTION txnq.set_backlog_quota_v1(
    p_topic_id integer, p_set_bytes boolean, p_limit_bytes bigint, p_set_seconds boolean,
    p_limit_seconds double precision, p_set_policy boolean, p_policy text
)
RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM txnq.authorize_v1(p_topic_id, 'admin');
    IF p_set_bytes IS NULL OR p_set_seconds IS NULL OR p_set_policy IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = 'set_bytes, set_seconds and set_policy must be true or false, not NULL';
    END IF;
    IF NOT (p_limit_bytes IS NULL OR p_limit_bytes = -1 OR p_limit_bytes > 0) THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('limit_bytes must be -1 (no limit) or above 0, not %s', p_limit_bytes);
    END IF;
    IF p_limit_seconds IS NOT NULL THEN
        PERFORM txnq.require_number_v1('limit_seconds', p_limit_seconds, -1, 3155760000, true);
        IF NOT (p_limit_seconds = -1 OR p_limit_seconds > 0) THEN
            RAISE EXCEPTION USING ERRCODE = 'TQ005',
                MESSAGE = format('limit_seconds must be -1 (no limit) or above 0, not %s', p_limit_seconds);
        END IF;
    END IF;
    IF p_policy IS NOT NULL
       AND p_policy NOT IN ('producer_hold', 'producer_error', 'consumer_backlog_eviction') THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('policy %L is unknown: use producer_hold, producer_error or '
                             'consumer_backlog_eviction', left(p_policy, 80));
    END IF;
    DELETE FROM txnq.backlog_quota_exceeded WHERE topic_id = p_topic_id;
    UPDATE txnq.topics
       SET backlog_quota_bytes = CASE WHEN p_set_bytes THEN p_limit_bytes ELSE backlog_quota_bytes END,
           backlog_quota_seconds = CASE WHEN p_set_seconds THEN p_limit_seconds ELSE backlog_quota_seconds END,
           backlog_quota_policy = CASE WHEN p_set_policy THEN p_policy ELSE backlog_quota_policy END
     WHERE topic_id = p_topic_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ001',
            MESSAGE = format('topic id %s does not exist', coalesce(p_topic_id::text, 'NULL'));
    END IF;
END;
$$;
