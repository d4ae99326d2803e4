-- txnq.delayed_entries_forget_topic_v1: installed by revision 0008
-- (schema/0008_shared_subscriptions.sql); revision 0017 moved it to a file of
-- its own, unchanged.
CREATE OR REPLACE FUNCTION txnq.delayed_entries_forget_topic_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM txnq.delayed_entries d USING gone g WHERE d.topic_id = g.topic_id;
    RETURN NULL;
END;
$$;
