-- txnq.storage_history (revision 0024): entry logs and ledgers over time,
-- one row per sample of txnq.console_sample_v1 (the web console's storage
-- chart). entry_logs counts the logs not dropped, entry_log_bytes is their
-- size on disk (indexes and TOAST included), ledgers the ledgers not deleted.
CREATE OR REPLACE VIEW txnq.storage_history AS
SELECT s.sampled_at, s.entry_logs, s.entry_log_bytes, s.ledgers
  FROM txnq.storage_samples s;
