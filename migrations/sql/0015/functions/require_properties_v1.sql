-- txnq.require_properties_v1: message properties are, per message, NULL (none)
-- or a JSON object whose values are all strings (Pulsar's map<string,string>;
-- the Python client's dict[str, str]). Revision 0015.
--
-- Parameters: properties (one element per message; NULL passes).
-- Returns nothing.
-- Errors: TQ005 naming the first message (1-based) whose properties are not an
--   object of strings.
CREATE OR REPLACE FUNCTION txnq.require_properties_v1(p_properties jsonb[])
RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    v_bad bigint;
BEGIN
    SELECT u.n INTO v_bad
      FROM unnest(p_properties) WITH ORDINALITY AS u(p, n)
     WHERE u.p IS NOT NULL
       AND (jsonb_typeof(u.p) <> 'object'
            OR EXISTS (SELECT 1 FROM jsonb_each(u.p) AS e WHERE jsonb_typeof(e.value) <> 'string'))
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('the properties of message %s are not a JSON object of strings: %s',
                             v_bad, left(p_properties[v_bad]::text, 200)),
            HINT = 'pass properties as {"name": "value", ...} with string values (or NULL for none)';
    END IF;
END;
$$;
