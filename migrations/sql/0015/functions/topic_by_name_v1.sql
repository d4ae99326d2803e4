-- txnq.topic_by_name_v1: a topic's row by name, for a role that holds any
-- grant on it (produce, consume or admin). Replaces the client's direct read
-- of txnq.topics (producers, consumers and admin look topics up by name).
-- Revision 0015.
--
-- Parameters: name.
-- Returns the topic's row, none when no topic has that name.
-- Locks: none. Errors: TQ018 when the topic exists and the role holds no grant on it.
CREATE OR REPLACE FUNCTION txnq.topic_by_name_v1(p_name text)
RETURNS SETOF txnq.topics
LANGUAGE sql STABLE AS $$
    SELECT txnq.authorize_use_v1(t.topic_id) FROM txnq.topics t WHERE t.name = p_name;
    SELECT t.* FROM txnq.topics t WHERE t.name = p_name;
$$;
