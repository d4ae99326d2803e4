-- txnq schema, revision 0013 (faster shared claims and acknowledgements). Applied by
-- migrations/versions/0013_shared_perf.py.
--
-- claims_by_visibility holds only the claims no transaction holds: every query
-- that reads claims in visibility order (claim_v1's redeliveries,
-- release_claims_v1, the client's next_visible_claim) asks for txn_tc IS NULL,
-- and a claim held by a transaction is never visible anyway. Partial, the index
-- can no longer stand in for the primary key when a claim is looked up by its
-- key (ack_shared_v3): with the statistics of an empty claims table (ANALYZE
-- right after everything was acknowledged, a common state) both looked like
-- one row, and the planner took this index, reading every claim of the
-- subscription once per message acknowledged.
DROP INDEX txnq.claims_by_visibility;
CREATE INDEX claims_by_visibility ON txnq.claims (subscription_id, visible_at) WHERE txn_tc IS NULL;
