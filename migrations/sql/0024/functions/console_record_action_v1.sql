-- txnq.console_record_action_v1: record one action an operator confirmed in
-- the web console (docs/console.md), done or failed. Revision 0024.
--
-- Parameters: p_action, one of the console's actions; p_target, what it
-- acted on (a topic, 'topic/subscription', a transaction id; 1 to 300
-- characters); p_details, its arguments (a JSON object); p_error, why it
-- failed (NULL: it succeeded). The role recorded is the caller's
-- (txnq.caller_v1()), never an argument.
-- Returns the action's id. Locks: none. Rows are deleted after
-- CONSOLE_HISTORY_SECONDS by txnq.console_sample_v1.
-- Errors: TQ018 unless the caller may administer (console_role_v1); TQ005
-- for an unknown action, a bad target or details that are not an object.
CREATE OR REPLACE FUNCTION txnq.console_record_action_v1(
    p_action text, p_target text, p_details jsonb, p_error text)
RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    v_id bigint;
BEGIN
    IF NOT (SELECT r.may_administer FROM txnq.console_role_v1() r) THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ018',
            MESSAGE = format('permission denied: role %s may not administer txnq from the console',
                             txnq.caller_v1()),
            HINT = 'run the console as a member of txnq_admin';
    END IF;
    IF p_action IS NULL OR p_action NOT IN ('create_topic', 'delete_topic', 'set_policy',
            'seek_subscription', 'skip_subscription', 'abort_transaction', 'produce') THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('unknown console action %s', coalesce(quote_literal(p_action), 'NULL')),
            HINT = 'record one of create_topic, delete_topic, set_policy, seek_subscription, '
                   'skip_subscription, abort_transaction, produce; nothing was recorded';
    END IF;
    IF p_target IS NULL OR length(p_target) NOT BETWEEN 1 AND 300 THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = 'a console action names its target in 1 to 300 characters',
            HINT = 'pass the topic, subscription or transaction acted on; nothing was recorded';
    END IF;
    IF p_details IS NULL OR jsonb_typeof(p_details) <> 'object' THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = 'a console action''s details are a JSON object',
            HINT = 'pass the action''s arguments as a JSON object ({} for none); nothing was recorded';
    END IF;
    INSERT INTO txnq.console_actions (role, action, target, details, error)
    VALUES (txnq.caller_v1(), p_action, p_target, p_details, left(p_error, 2000))
    RETURNING action_id INTO v_id;
    RETURN v_id;
END $$;
