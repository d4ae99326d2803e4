-- The routing table of the proxy (txnq_cluster.routing, rules in cluster.sql):
-- one row per function of schema txnq that the proxy routes. The single place
-- that says how each call of the Python client reaches the shards
-- (docs/cluster.md copies it); refused.sql adds a 'refused' row for every
-- other function of a shard's schema txnq; spark.sql adds the rows of the
-- Spark functions it routes.
INSERT INTO txnq_cluster.routing (function_name, rule, note) VALUES
    ('append_v5', 'partition', 'produce, single and batched; idempotence and fencing on the owning shard'),
    ('append_v6', 'partition', 'append_v5''s route (the client calls v6); decided appends refused'),
    ('fetch_v4', 'partition', 'exclusive and failover consume'),
    ('ack_v3', 'partition', 'individual and cumulative acks (outside a transaction)'),
    ('cursor_generation_v1', 'partition', 'a cumulative ack''s rewind check'),
    ('seek_v2', 'partition', 'seek one partition'),
    ('schema_revision_v1', 'first', 'the client''s schema check (cluster status checks every shard)'),
    ('topic_by_name_v1', 'first', 'topic metadata, alike on every shard'),
    ('topic_partition_count_v1', 'first', 'topic metadata, alike on every shard'),
    ('subscription_by_name_v1', 'first', 'subscription metadata, alike on every shard'),
    ('subscription_consumers_v1', 'first', 'consumers, registered on every shard'),
    ('add_partitions_v2', 'all', 'partitions grow on every shard alike'),
    ('delete_topic_v2', 'all', 'unforced: the cluster''s backlog and consumers are checked first'),
    ('set_backlog_quota_v1', 'all', 'topic policy'),
    ('set_topic_policy_v1', 'all', 'topic policy'),
    ('close_consumer_v1', 'all', 'consumer sessions live on every shard'),
    ('unsubscribe_v2', 'all', 'subscriptions live on every shard'),
    ('register_waiters_v1', 'all', 'harmless: a proxy client polls (a shard''s NOTIFY does not reach the proxy)'),
    ('roll_entry_log_v4', 'all', 'an append''s hint (v3 for older clients): each shard rolls its own entry '
                                  'log if full or old; the answer (largest active log id) is not compared'),
    ('roll_entry_log_v3', 'all', 'an append''s hint: each shard rolls its own entry log if full or old; '
                                  'the answer (largest active log id) is not compared'),
    ('heartbeat_consumer_v2', 'all', 'the lease is renewed on every shard; live consumers from shard 0'),
    ('grant_topic_permission_v1', 'all', 'grants live on every shard alike (each checks its own data path); '
                                         'idempotent, the most any shard added'),
    ('revoke_topic_permission_v1', 'all', 'on every shard alike; idempotent, the most any shard removed'),
    ('console_role_v1', 'first', 'the web console: the caller''s role, checked on shard 0'),
    ('console_record_action_v1', 'first', 'the web console''s audit trail, kept on shard 0'),
    ('console_sample_v1', 'all', 'the console''s chart history: each shard samples its own partitions'),
    ('create_topic_v2', 'all_ids', 'topic id allocated by the proxy, the topic created on every shard'),
    ('subscribe_v2', 'all_ids', 'every type: subscription id allocated by the proxy, cursors on every shard'),
    ('register_consumer_v2', 'all_ids', 'consumer id allocated by the proxy'),
    ('register_producer_v2', 'all_ids', 'producer id allocated by the proxy; epoch grows on every shard (fencing); '
                                        'each partition''s last sequence from its owner'),
    ('topic_partitions_v1', 'owned', 'describe: each partition from its owner'),
    ('cursor_positions_v1', 'owned', 'each partition''s cursor from its owner'),
    ('subscription_cursors_v1', 'owned', 'each partition''s cursor from its owner'),
    ('list_topics_v1', 'summed', 'metadata from shard 0, entries added up'),
    ('list_subscriptions_v1', 'summed', 'metadata from shard 0, backlog added up'),
    ('backlog_quota_info_v1', 'summed', 'limits from shard 0, exceeded since the earliest shard'),
    ('ack_shared_v5', 'partition', 'shared and key_shared: individual acks (outside a transaction)'),
    ('nack_shared_v3', 'partition', 'shared and key_shared: negative acks, redelivered after their delay'),
    ('append_delayed_v2', 'partition', 'delayed delivery: the owning shard''s claims hand it out when due'),
    ('dead_letter_v3', 'partition', 'a message the consumer cannot decode: read on its shard, the copy appended on '
                                    'the dead-letter partition''s shard first (unless there already), then acked'),
    ('release_claims_v3', 'all', 'a consumer''s claims (or dead consumers'') released on every shard, counts added up'),
    ('next_visible_claim_v2', 'all', 'the earliest next visible claim of the shards'),
    ('claim_v6', 'spread', 'shared and key_shared: each shard''s claim_v6 in turn from a shard the consumer and '
                           'call pick, merged; dead letters moved by the proxy (append on the dead-letter '
                           'partition''s shard, then ack the original)')
ON CONFLICT (function_name) DO UPDATE SET rule = EXCLUDED.rule, note = EXCLUDED.note;
