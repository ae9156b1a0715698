CREATE OR REPLACE FUNCTION tollgate_histogram_add(p_a int[], p_b int[])
RETURNS int[] LANGUAGE plpgsql IMMUTABLE AS $$
-- The sum of two histograms of tollgate_histogram's form (either may be NULL).
DECLARE
  h int[];
  lo int;
  hi int;
  i int;
BEGIN
  IF p_a IS NULL THEN
    RETURN p_b;
  END IF;
  IF p_b IS NULL THEN
    RETURN p_a;
  END IF;
  lo := least(array_lower(p_a, 1), array_lower(p_b, 1));
  hi := greatest(array_upper(p_a, 1), array_upper(p_b, 1));
  h := array_fill(0, ARRAY[hi - lo + 1], ARRAY[lo]);
  FOR i IN lo .. hi LOOP
    h[i] := coalesce(p_a[i], 0) + coalesce(p_b[i], 0);
  END LOOP;
  RETURN h;
END
$$;
