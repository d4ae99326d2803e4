-- txnq.cursor_status (revision 0024; revision 0027 counts the messages of
-- claim ranges in in_flight): one row per subscription and
-- partition (its cursor), for the web console's subscription page.
--
-- lag_entries is how many entries the subscription may read there and its
-- mark-delete offset has not passed (up to the max read offset, or the high
-- watermark for read_uncommitted): from offsets alone, markers and
-- individually acknowledged entries included (subscription_status has the
-- exact backlog, summed over partitions). individual_acks are the acks
-- held above the mark-delete offset; in_flight the messages of a shared or
-- key_shared subscription handed out and not acknowledged, redelivering
-- those delivered more than once, redeliveries their deliveries after the
-- first. dead_letters counts the entries of the subscription's default
-- dead-letter topic (<topic>-<subscription>-DLQ) when it exists, per
-- partition of that topic (NULL otherwise).
CREATE OR REPLACE VIEW txnq.cursor_status AS
SELECT t.name AS topic,
       c.topic_id,
       s.name AS subscription,
       c.subscription_id,
       s.subscription_type,
       s.isolation,
       c.partition,
       c.mark_delete_offset,
       CASE WHEN s.isolation = 'read_uncommitted' THEN p.next_offset - 1
            ELSE p.max_read_offset END AS readable_offset,
       greatest(CASE WHEN s.isolation = 'read_uncommitted' THEN p.next_offset - 1
                     ELSE p.max_read_offset END - c.mark_delete_offset, 0) AS lag_entries,
       (SELECT count(*) FROM txnq.individual_acks a
         WHERE a.topic_id = c.topic_id AND a.partition = c.partition
           AND a.subscription_id = c.subscription_id) AS individual_acks,
       k.in_flight + g.in_flight AS in_flight,
       k.redelivering,
       k.redeliveries,
       (SELECT d.next_offset FROM txnq.topics dt
          JOIN txnq.partitions d ON d.topic_id = dt.topic_id
         WHERE dt.name = t.name || '-' || s.name || '-DLQ'
           AND d.partition = c.partition % dt.partitions) AS dead_letters,
       c.updated_at
  FROM txnq.cursors c
  JOIN txnq.subscriptions s ON s.subscription_id = c.subscription_id
  JOIN txnq.topics t ON t.topic_id = c.topic_id
  JOIN txnq.partitions p ON p.topic_id = c.topic_id AND p.partition = c.partition
 CROSS JOIN LATERAL (
       SELECT count(*) AS in_flight,
              count(*) FILTER (WHERE m.delivered > 1) AS redelivering,
              coalesce(sum(greatest(m.delivered - 1, 0)), 0)::bigint AS redeliveries
         FROM txnq.claims m
        WHERE m.topic_id = c.topic_id AND m.partition = c.partition
          AND m.subscription_id = c.subscription_id) k
 CROSS JOIN LATERAL (
       SELECT coalesce(sum(r.message_count - r.acked_count), 0)::bigint AS in_flight
         FROM txnq.claim_ranges r
        WHERE r.topic_id = c.topic_id AND r.partition = c.partition
          AND r.subscription_id = c.subscription_id) g;
