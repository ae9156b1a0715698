CREATE OR REPLACE FUNCTION tollgate_firewall_actions(p_firewall jsonb)
RETURNS TABLE (action text, category text) LANGUAGE sql IMMUTABLE AS $$
  -- The firewall's actions on one decision, from the outcome its permit stores
  -- (metadata.decision_metadata.firewall, src/governance/evaluate.ts): `block` mode blocked its
  -- categories; `allow` mode redacted some and flagged others; `monitor` mode only flagged. One row
  -- per category named. The Governance page's counts read it on permits and the rollup folds it
  -- (tollgate_fold_governance), so both count the same.
  SELECT 'blocked', c FROM jsonb_array_elements_text(CASE WHEN p_firewall->>'mode' = 'block' THEN p_firewall->'categories' END) AS c
   WHERE jsonb_typeof(p_firewall) = 'object'
  UNION ALL
  SELECT 'redacted', c FROM jsonb_array_elements_text(CASE WHEN p_firewall->>'mode' = 'allow' THEN p_firewall->'redacted' END) AS c
   WHERE jsonb_typeof(p_firewall) = 'object'
  UNION ALL
  SELECT 'flagged', c FROM jsonb_array_elements_text(CASE p_firewall->>'mode'
                                                       WHEN 'allow' THEN p_firewall->'flagged'
                                                       WHEN 'monitor' THEN p_firewall->'categories' END) AS c
   WHERE jsonb_typeof(p_firewall) = 'object';
$$;
