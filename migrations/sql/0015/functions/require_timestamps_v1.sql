-- txnq.require_timestamps_v1: timestamps a message carries (event times,
-- delivery times) lie where PostgreSQL, Python and Spark can all represent
-- them: from 0001-01-01 to 9999-12-31 in UTC, never ±infinity. A stored
-- timestamp outside that range could not be read back by a consumer.
-- Revision 0015.
--
-- Parameters: what (the argument's name), values (NULL and NULL elements pass:
--   "no timestamp").
-- Returns nothing.
-- Errors: TQ005 naming the first value out of range.
CREATE OR REPLACE FUNCTION txnq.require_timestamps_v1(p_what text, p_values timestamptz[])
RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    v_bad timestamptz;
BEGIN
    SELECT v INTO v_bad FROM unnest(p_values) AS v
     WHERE v < '0001-01-01 00:00:00+00'::timestamptz OR v > '9999-12-31 23:59:59.999999+00'::timestamptz
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('%s %s is outside 0001-01-01 .. 9999-12-31 UTC', p_what, v_bad),
            HINT = 'pass a timestamp that Python and Spark can represent (or NULL for none)';
    END IF;
END;
$$;
