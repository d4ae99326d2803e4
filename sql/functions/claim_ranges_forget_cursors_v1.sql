-- txnq.claim_ranges_forget_cursors_v1: revision 0027. Cursors leave
-- (unsubscribe, topic deletion): their claim ranges go with them, as their
-- claims do (txnq.claims_forget_cursors_v1). A statement trigger on
-- txnq.cursors (AFTER DELETE).
CREATE OR REPLACE FUNCTION txnq.claim_ranges_forget_cursors_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM txnq.claim_ranges c USING gone g
     WHERE c.topic_id = g.topic_id AND c.partition = g.partition AND c.subscription_id = g.subscription_id;
    RETURN NULL;
END;
$$;
DROP TRIGGER IF EXISTS claim_ranges_forget_cursors ON txnq.cursors;
CREATE TRIGGER claim_ranges_forget_cursors AFTER DELETE ON txnq.cursors
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION txnq.claim_ranges_forget_cursors_v1();
