-- txnq.console_action_log (revision 0024): what operators did from the web
-- console, one row per confirmed action (txnq.console_record_action_v1):
-- when, as which role, the action, its target and arguments, and the error
-- when it failed (NULL: done). Kept CONSOLE_HISTORY_SECONDS.
CREATE OR REPLACE VIEW txnq.console_action_log AS
SELECT a.action_id, a.at, a.role, a.action, a.target, a.details, a.error,
       a.error IS NULL AS succeeded
  FROM txnq.console_actions a;
