-- Revision 0015 (workers): a compaction target remembers how many rows its
-- source had when its catch-up last ran (txnq.compaction_catch_up_v2), so the
-- swap (txnq.compaction_swap_v2) checks the count it is given against the
-- catch-up's own instead of trusting it: a wrong or NULL count made
-- compaction_swap_v1 skip the catch-up under its lock and drop live rows the
-- target did not have.
ALTER TABLE txnq.entry_logs ADD COLUMN compaction_source_rows bigint;
