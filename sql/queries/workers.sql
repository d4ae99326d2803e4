-- Worker coordination outside the data path.

-- name: job_try_lock
-- The scheduler's lock that keeps one instance of a job running across
-- processes. Session-level: held on the job's own connection from the start to
-- the end of a run; if the process dies, PostgreSQL drops it with the session.
SELECT pg_try_advisory_lock(hashtext(%(key)s))

-- name: job_release_lock
SELECT pg_advisory_unlock(hashtext(%(key)s))
