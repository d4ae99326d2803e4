-- txnq.key_hash_v1 / txnq.key_owner_v1: key_shared routing by consistent hashing.
--
-- key_hash_v1(key): a stable signed 32-bit hash of a message key (the first
--   four bytes of its MD5; a NULL key hashes as the empty key, so keyless
--   messages all go to one consumer, as Pulsar's NONE_KEY).
-- key_owner_v1(hash, points, owners): the consumer owning a hash on a ring
--   whose points are sorted ascending (owners[i] owns the arc ending at
--   points[i]; past the last point the ring wraps to the first). Each live
--   consumer puts txnq's 16 points on the ring (hashes of 'name#0'..'name#15'),
--   so a consumer that joins or leaves moves only the keys of its own arcs.
CREATE OR REPLACE FUNCTION txnq.key_hash_v1(p_key bytea) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT ('x' || substr(md5(coalesce(p_key, ''::bytea)), 1, 8))::bit(32)::integer
$$;

CREATE OR REPLACE FUNCTION txnq.key_owner_v1(p_hash integer, p_points integer[], p_owners bigint[])
RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce((SELECT u.o FROM unnest(p_points, p_owners) AS u(p, o)
                      WHERE u.p >= p_hash ORDER BY u.p LIMIT 1),
                    p_owners[1])
$$;
