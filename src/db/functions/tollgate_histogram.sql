CREATE OR REPLACE FUNCTION tollgate_histogram(p_buckets int[], p_counts int[])
RETURNS int[] LANGUAGE plpgsql IMMUTABLE AS $$
-- A histogram from (bucket, count) pairs: element b holds the count of bucket b, the subscripts
-- running from the lowest bucket given to the highest (NULL when none is given).
DECLARE
  h int[];
  i int;
BEGIN
  IF coalesce(cardinality(p_buckets), 0) = 0 THEN
    RETURN NULL;
  END IF;
  h := array_fill(0, ARRAY[(SELECT max(b) - min(b) + 1 FROM unnest(p_buckets) AS b)], ARRAY[(SELECT min(b) FROM unnest(p_buckets) AS b)]);
  FOR i IN 1 .. cardinality(p_buckets) LOOP
    h[p_buckets[i]] := h[p_buckets[i]] + p_counts[i];
  END LOOP;
  RETURN h;
END
$$;
