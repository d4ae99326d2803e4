-- txnq.topic_history (revision 0024): the web console's chart history, one
-- row per topic and sample (txnq.console_sample_v1, every
-- CONSOLE_SAMPLE_INTERVAL_SECONDS, kept CONSOLE_HISTORY_SECONDS).
--
-- entries_written and entries_acked are counters (markers included;
-- acknowledged summed over every subscription's cursors): a rate is the
-- difference of two samples over their time apart. backlog_entries is the
-- entries every subscription may read and has not passed with its
-- mark-delete offset, from offsets alone (an upper bound of the backlog:
-- subscription_status has the exact one). Topics deleted since keep no row.
CREATE OR REPLACE VIEW txnq.topic_history AS
SELECT t.name AS topic,
       s.topic_id,
       s.sampled_at,
       s.entries_written,
       s.entries_acked,
       s.backlog_entries,
       s.live_ledgers,
       s.live_bytes
  FROM txnq.topic_samples s
  JOIN txnq.topics t ON t.topic_id = s.topic_id;
