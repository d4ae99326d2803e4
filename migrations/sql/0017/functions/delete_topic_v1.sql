-- txnq.delete_topic_v1: superseded; kept for the clients of earlier revisions
-- as a thin wrapper of txnq.delete_topic_v2 (same signature and result). Made
-- by revision 0015 (functions/superseded_0015_produce.sql); revision 0017
-- moved it to a file of its own, unchanged.
CREATE OR REPLACE FUNCTION txnq.delete_topic_v1(p_topic_id integer, p_force boolean DEFAULT false)
RETURNS void
LANGUAGE sql AS $$
    SELECT txnq.delete_topic_v2(p_topic_id, p_force)
$$;
