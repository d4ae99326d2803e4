-- txnq.partition_for_key_v2: the partition of a message key, the same as the
-- Python producer's routing: CRC-32 (IEEE, zlib.crc32) of the key's bytes
-- modulo the partition count. For clients in any language, and for
-- txnq.send_at_commit_v2. v2 (revision 0015) is not STRICT, so a NULL
-- partition count is an error rather than a NULL partition;
-- partition_for_key_v1 becomes a wrapper of it.
--
-- Parameters: key (bytes; a text key is its UTF-8 bytes; NULL: no key),
--   partitions (1 .. 4096, a topic's partition count).
-- Returns the partition, 0 .. partitions - 1 (NULL for a NULL key: the caller
--   picks a partition).
-- Locks: none. Immutable.
-- Errors: TQ005 partitions NULL or outside 1 .. 4096.
CREATE OR REPLACE FUNCTION txnq.partition_for_key_v2(p_key bytea, p_partitions integer)
RETURNS integer
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
    v_crc bigint := 4294967295;  -- 0xFFFFFFFF
    v_byte integer;
BEGIN
    IF p_partitions IS NULL OR p_partitions NOT BETWEEN 1 AND 4096 THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('partition_for_key_v2: partitions must be from 1 to 4096, not %s',
                             coalesce(p_partitions::text, 'NULL')),
            HINT = 'pass the topic''s partition count (txnq.topics.partitions)';
    END IF;
    IF p_key IS NULL THEN
        RETURN NULL;
    END IF;
    FOR i IN 0 .. length(p_key) - 1 LOOP
        v_byte := get_byte(p_key, i);
        v_crc := v_crc # v_byte;
        FOR j IN 1 .. 8 LOOP
            IF v_crc & 1 = 1 THEN
                v_crc := (v_crc >> 1) # 3988292384;  -- 0xEDB88320
            ELSE
                v_crc := v_crc >> 1;
            END IF;
        END LOOP;
    END LOOP;
    RETURN ((v_crc # 4294967295) % p_partitions)::integer;
END;
$$;
