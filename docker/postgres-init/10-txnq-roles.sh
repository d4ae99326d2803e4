#!/bin/sh
# Runs once, when the postgres container initialises an empty data volume
# (/docker-entrypoint-initdb.d). It creates the login role the coordinator
# workers use, txnq_coordinator, a member of the NOLOGIN group role
# txnq_worker: the coordinator's functions, no DDL (docs/security.md).
# `txnq migrate` grants the group roles their privileges; they are created
# here first so the login role can join one.
#
# Safe to run again (psql -f against a running server, e.g. for a volume
# created before this script existed): roles that exist are left as they are,
# except that the login role's password is set to TXNQ_WORKER_PASSWORD.
#
# TXNQ_WORKER_ROLE names the login role (default txnq_coordinator).
set -eu
: "${TXNQ_WORKER_PASSWORD:?set TXNQ_WORKER_PASSWORD}"
psql -v ON_ERROR_STOP=1 --no-psqlrc --username "${POSTGRES_USER:-postgres}" \
    --dbname "${POSTGRES_DB:-postgres}" -v worker_password="$TXNQ_WORKER_PASSWORD" \
    -v worker_role="${TXNQ_WORKER_ROLE:-txnq_coordinator}" <<'SQL'
SELECT format('CREATE ROLE %I NOLOGIN', r)
  FROM unnest(ARRAY['txnq_admin', 'txnq_client', 'txnq_worker', 'txnq_reader', 'txnq_scheduler']) AS r
 WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r) \gexec
SELECT format('CREATE ROLE %I LOGIN', :'worker_role')
 WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = :'worker_role') \gexec
ALTER ROLE :"worker_role" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD :'worker_password';
GRANT txnq_worker TO :"worker_role";
SQL
