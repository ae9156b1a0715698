CREATE OR REPLACE FUNCTION tollgate_rate_bucket(p_at timestamptz, p_seconds int)
RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
  SELECT floor(extract(epoch FROM p_at) * 100 / p_seconds)::bigint;
$$;
