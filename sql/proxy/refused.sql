-- Everything of a shard's schema txnq that the proxy does not route yet is
-- refused with TQ030, never answered wrongly: txnq_cluster.install_refusals
-- reads shard 0's catalog and gives every other function of schema txnq a
-- proxy function of the same signature that raises TQ030, and every view of
-- schema txnq a proxy view of the same columns whose reading raises TQ030.
-- Run by `txnq cluster init` after routed.sql, routed_ids.sql and routing.sql.

-- Shard 0's functions of schema txnq: name, arguments (with defaults),
-- identity arguments and result, as pg_get_function_* print them.
CREATE OR REPLACE FUNCTION txnq_cluster.shard_functions()
RETURNS TABLE (function_name text, arguments text, identity_arguments text, result text)
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON 0;
    SELECT p.proname::text AS function_name, pg_catalog.pg_get_function_arguments(p.oid) AS arguments,
           pg_catalog.pg_get_function_identity_arguments(p.oid) AS identity_arguments,
           pg_catalog.pg_get_function_result(p.oid) AS result
      FROM pg_catalog.pg_proc p
      JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
     WHERE n.nspname = 'txnq' AND p.prokind = 'f';
$$;

-- Shard 0's views of schema txnq and their columns as a select list of typed
-- NULLs (a type of schema txnq, which the proxy lacks, becomes text).
CREATE OR REPLACE FUNCTION txnq_cluster.shard_views()
RETURNS TABLE (view_name text, select_list text)
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON 0;
    SELECT c.relname::text AS view_name,
           string_agg(format('NULL::%s AS %I',
                             CASE WHEN tn.nspname = 'txnq' THEN 'text'
                                  ELSE pg_catalog.format_type(a.atttypid, a.atttypmod) END,
                             a.attname), ', ' ORDER BY a.attnum) AS select_list
      FROM pg_catalog.pg_class c
      JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
      JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
      JOIN pg_catalog.pg_type t ON t.oid = a.atttypid
      JOIN pg_catalog.pg_namespace tn ON tn.oid = t.typnamespace
     WHERE n.nspname = 'txnq' AND c.relkind IN ('v', 'm')
     GROUP BY c.relname;
$$;

-- The rows of a refused view: none, TQ030 instead.
CREATE OR REPLACE FUNCTION txnq_cluster.refused_rows(p_view text)
RETURNS SETOF record
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM txnq_cluster.refuse(p_view || ' (a view)');
END;
$$;

-- txnq_cluster.install_refusals: create the refusing functions and views.
-- Returns the number of functions and views made to refuse, and the functions
-- left out (a signature naming a type of schema txnq that the proxy lacks:
-- calling them on the proxy fails with PostgreSQL's "does not exist"). A view
-- whose columns changed on the shards (after an upgrade) needs its proxy view
-- dropped first: CREATE OR REPLACE VIEW only adds columns.
CREATE OR REPLACE FUNCTION txnq_cluster.install_refusals(
    OUT refused integer, OUT views integer, OUT left_out text[])
LANGUAGE plpgsql AS $$
DECLARE
    f record;
    v record;
BEGIN
    refused := 0;
    views := 0;
    left_out := '{}';
    -- Views first: a function's result may be a view's row type
    -- (txn_list_v1 returns SETOF txnq.transaction_status).
    FOR v IN SELECT * FROM txnq_cluster.shard_views() s ORDER BY s.view_name LOOP
        EXECUTE format(
            'CREATE OR REPLACE VIEW txnq.%I AS SELECT %s FROM txnq_cluster.refused_rows(%L) AS r(refused boolean)',
            v.view_name, v.select_list, v.view_name);
        views := views + 1;
    END LOOP;
    FOR f IN SELECT * FROM txnq_cluster.shard_functions() s ORDER BY s.function_name, s.identity_arguments LOOP
        CONTINUE WHEN EXISTS (SELECT FROM txnq_cluster.routing r
                               WHERE r.function_name = f.function_name AND r.rule <> 'refused');
        CONTINUE WHEN f.result = 'trigger';
        BEGIN
            EXECUTE format(
                'CREATE OR REPLACE FUNCTION txnq.%I(%s) RETURNS %s LANGUAGE plpgsql AS %L',
                f.function_name, f.arguments, f.result,
                format('BEGIN PERFORM txnq_cluster.refuse(%L); END', f.function_name));
            INSERT INTO txnq_cluster.routing (function_name, rule, note)
            VALUES (f.function_name, 'refused', 'not routed yet: TQ030')
            ON CONFLICT (function_name) DO NOTHING;
            refused := refused + 1;
        EXCEPTION WHEN undefined_object OR invalid_function_definition OR wrong_object_type
                       OR feature_not_supported OR invalid_schema_name OR syntax_error THEN
            left_out := left_out || format('%s(%s)', f.function_name, f.identity_arguments);
        END;
    END LOOP;
END;
$$;
