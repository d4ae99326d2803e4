-- txnq.partition_for_key_v1: the partition of a message key, the same as the
-- Python producer's routing: CRC-32 (IEEE, zlib.crc32) of the key's bytes
-- modulo the partition count. For clients in any language, and for
-- txnq.send_at_commit_v1.
--
-- Parameters: key (bytes; a text key is its UTF-8 bytes), partitions (> 0).
-- Returns the partition, 0 .. partitions - 1 (NULL for a NULL key).
-- Locks: none. Immutable.
CREATE OR REPLACE FUNCTION txnq.partition_for_key_v1(p_key bytea, p_partitions integer)
RETURNS integer
LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE
    v_crc bigint := 4294967295;  -- 0xFFFFFFFF
    v_byte integer;
BEGIN
    IF p_partitions < 1 THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('partition_for_key_v1: partitions must be at least 1, not %s', p_partitions);
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
