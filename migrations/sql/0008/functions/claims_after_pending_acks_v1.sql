-- txnq.claims_after_pending_acks_v1: the end of a transaction on a shared or
-- key_shared subscription. A statement trigger on txnq.pending_acks (AFTER
-- DELETE): complete_txn_subscription_v1 deletes a decided transaction's
-- pending acks after applying (commit) or releasing (abort) them, and this
-- does the same to the claims those acks hold, in the same transaction:
--   commit (COMMITTING/COMMITTED): the claims are deleted (acknowledged) and
--     the mark-delete offset follows;
--   otherwise (ABORTING, a timeout abort included): the claims are deliverable
--     again at once, to any consumer; the cursor generation that the abort
--     bumped (for exclusive/failover consumers to rewind) is taken as seen,
--     so it does not reset the shared dispatch.
-- Locks: the claim rows; complete_txn_subscription_v1 holds the cursor row.
CREATE OR REPLACE FUNCTION txnq.claims_after_pending_acks_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    r record;
BEGIN
    FOR r IN
        SELECT DISTINCT g.topic_id, g.partition, g.subscription_id, g.tc_id, g.txn_seq,
               t.state IN ('COMMITTING', 'COMMITTED') AS committed
          FROM gone g
          JOIN txnq.cursors c
            ON c.topic_id = g.topic_id AND c.partition = g.partition AND c.subscription_id = g.subscription_id
          LEFT JOIN txnq.transactions t ON t.tc_id = g.tc_id AND t.txn_seq = g.txn_seq
         WHERE c.dispatch_offset IS NOT NULL
    LOOP
        IF r.committed THEN
            DELETE FROM txnq.claims c
             WHERE c.topic_id = r.topic_id AND c.partition = r.partition AND c.subscription_id = r.subscription_id
               AND c.txn_tc = r.tc_id AND c.txn_seq = r.txn_seq;
        ELSE
            UPDATE txnq.claims c
               SET txn_tc = NULL, txn_seq = NULL, consumer_id = NULL, visible_at = clock_timestamp(),
                   reason = 'txn_abort'
             WHERE c.topic_id = r.topic_id AND c.partition = r.partition AND c.subscription_id = r.subscription_id
               AND c.txn_tc = r.tc_id AND c.txn_seq = r.txn_seq;
            UPDATE txnq.cursors c SET dispatch_generation = c.generation
             WHERE c.topic_id = r.topic_id AND c.partition = r.partition AND c.subscription_id = r.subscription_id
               AND c.dispatch_generation = c.generation - 1;
        END IF;
        PERFORM txnq.shared_advance_v1(r.topic_id, r.partition, r.subscription_id);
    END LOOP;
    RETURN NULL;
END;
$$;
DROP TRIGGER IF EXISTS claims_after_pending_acks ON txnq.pending_acks;
CREATE TRIGGER claims_after_pending_acks AFTER DELETE ON txnq.pending_acks
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION txnq.claims_after_pending_acks_v1();
