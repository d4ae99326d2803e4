-- txnq.job_failure_status (revision 0016): what the background work is
-- failing on now, one row per job and topic (partition, entry log,
-- transaction). The scheduler's lifecycle jobs (ttl, retention,
-- backlog_quota, gc) go on with the other topics when one fails and replace
-- their rows at every run, so a row here failed in the job's latest run;
-- marker_phase rows are transactions a coordinator worker could not finish
-- (shown while the transaction is still undone).
--
-- topic is the topic's current name (else its name when it failed);
-- partition is NULL when the whole topic failed; subject names what else
-- failed ('entry log 7', 'transaction 3:17'); failures counts the runs that
-- failed on it in a row, since first_failed_at; failing_seconds is how long
-- it has been failing; error and sqlstate are the latest error (an SQLSTATE
-- of class 22, data exception, usually means a bad value in the topic's row:
-- fix it with `txnq topics set-policy`).
CREATE OR REPLACE VIEW txnq.job_failure_status AS
SELECT f.job,
       nullif(f.topic_id, 0) AS topic_id,
       coalesce(t.name, f.topic) AS topic,
       nullif(f.partition, -1) AS partition,
       nullif(f.subject, '') AS subject,
       f.failures,
       f.first_failed_at,
       f.last_failed_at,
       extract(epoch FROM (now() - f.first_failed_at))::float8 AS failing_seconds,
       f.error,
       f.sqlstate
  FROM txnq.job_failures f
  LEFT JOIN txnq.topics t ON t.topic_id = f.topic_id
 WHERE f.job <> 'marker_phase'
    OR EXISTS (SELECT 1 FROM txnq.transactions x
                WHERE f.subject = 'transaction ' || x.tc_id || ':' || x.txn_seq
                  AND x.state IN ('COMMITTING', 'ABORTING'));
