-- txnq.topic_grants: the per-topic permissions (revision 0015,
-- docs/security.md): who may produce, consume or administer which topic or
-- topic-name prefix. Each role sees what txnq.topic_permissions_v1 shows it:
-- admins and txnq_reader every grant, other roles their own grants and those
-- on topics they administer.
--
-- role, resource (a topic name or a prefix), kind ('topic' | 'prefix'),
-- action ('produce' | 'consume' | 'admin'), granted_by, granted_at,
-- role_exists (false: the role was dropped; revoke the grant to remove it).
CREATE OR REPLACE VIEW txnq.topic_grants AS
SELECT role, resource, kind, action, granted_by, granted_at, role_exists
  FROM txnq.topic_permissions_v1(NULL, NULL);
