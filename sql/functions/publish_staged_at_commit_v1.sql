-- txnq.publish_staged_at_commit_v1: superseded; kept for the clients of
-- earlier revisions as a thin wrapper of txnq.publish_staged_v2 (same
-- signature and result). Made by revision 0015
-- (functions/superseded_0015_produce.sql); revision 0017 moved it to a file of
-- its own, unchanged.
--
-- The triggers call publish_staged_at_commit_v2 now (publish_staged_v2.sql);
-- this one stays for whoever attached it to a trigger of their own.
CREATE OR REPLACE FUNCTION txnq.publish_staged_at_commit_v1()
RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM txnq.publish_staged_v2();
    RETURN NULL;
END;
$$;
