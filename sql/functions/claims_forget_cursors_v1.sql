-- txnq.claims_forget_cursors_v1: installed by revision 0008
-- (schema/0008_shared_subscriptions.sql); revision 0017 moved it to a file of
-- its own, unchanged.
--
-- Cursors leave (unsubscribe, topic deletion): their claims go with them.
CREATE OR REPLACE FUNCTION txnq.claims_forget_cursors_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM txnq.claims c USING gone g
     WHERE c.topic_id = g.topic_id AND c.partition = g.partition AND c.subscription_id = g.subscription_id;
    RETURN NULL;
END;
$$;
