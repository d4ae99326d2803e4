-- txnq.console_role_v1: who the web console runs as, and whether it may
-- administer (docs/console.md). Revision 0024.
--
-- The console offers its actions (create or delete a topic, policies,
-- seek, abort, test messages) only to an administrator of all of txnq
-- (txnq.caller_is_admin_v1, docs/security.md: superusers, the owner of
-- schema txnq, members of txnq_admin; not the worker roles); every other
-- role, txnq_reader's members among them, gets a read-only page.
-- Parameters: none. Returns the caller's role name and whether it is
-- trusted. Locks: none. Errors: none. For txnq_reader and txnq_client.
CREATE OR REPLACE FUNCTION txnq.console_role_v1(OUT role text, OUT may_administer boolean)
LANGUAGE sql STABLE AS $$
    SELECT txnq.caller_v1()::text, txnq.caller_is_admin_v1(txnq.caller_v1());
$$;
