-- txnq.require_number_v1: a numeric argument is a finite number within bounds.
-- Revision 0015.
--
-- Parameters: what (the argument's name, for the message), value, minimum,
--   maximum (either bound NULL: unbounded), nullable (a NULL value passes).
-- Returns the value.
-- Errors: TQ005 when the value is NULL (unless nullable), NaN, ±Infinity or
--   outside [minimum, maximum].
CREATE OR REPLACE FUNCTION txnq.require_number_v1(
    p_what text,
    p_value double precision,
    p_minimum double precision DEFAULT NULL,
    p_maximum double precision DEFAULT NULL,
    p_nullable boolean DEFAULT false
) RETURNS double precision
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    IF p_value IS NULL THEN
        IF p_nullable THEN
            RETURN NULL;
        END IF;
        RAISE EXCEPTION USING ERRCODE = 'TQ005', MESSAGE = format('%s must not be NULL', p_what),
            HINT = 'pass a value (the function''s header lists what each argument means)';
    END IF;
    IF p_value = 'NaN'::double precision OR p_value IN ('Infinity', '-Infinity')
       OR p_value < p_minimum OR p_value > p_maximum THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('%s must be a finite number%s, not %s', p_what,
                             CASE WHEN p_minimum IS NOT NULL AND p_maximum IS NOT NULL
                                      THEN format(' from %s to %s', p_minimum, p_maximum)
                                  WHEN p_minimum IS NOT NULL THEN format(' of at least %s', p_minimum)
                                  WHEN p_maximum IS NOT NULL THEN format(' of at most %s', p_maximum)
                                  ELSE '' END,
                             p_value),
            HINT = 'correct the argument and call again; nothing was changed';
    END IF;
    RETURN p_value;
END;
$$;
