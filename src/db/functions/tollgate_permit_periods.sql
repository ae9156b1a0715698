-- The spend periods a permit's reservation was booked against: its stored list, or, when that is
-- empty (an allow stores none: they are the UTC day, ISO week, month and quarter of its issue),
-- those periods derived from issued_at, as src/governance/periods.ts computes them.
CREATE OR REPLACE FUNCTION tollgate_permit_periods(p_periods jsonb, p_issued_at timestamptz)
RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN jsonb_array_length(p_periods) > 0 THEN p_periods ELSE (
    SELECT jsonb_agg(jsonb_build_object('kind', k, 'start', to_char(date_trunc(k, p_issued_at AT TIME ZONE 'UTC'), 'YYYY-MM-DD')) ORDER BY o)
      FROM unnest(ARRAY['day', 'week', 'month', 'quarter']) WITH ORDINALITY AS t(k, o)) END;
$$;
