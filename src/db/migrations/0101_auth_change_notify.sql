-- Up Migration

-- API processes cache authenticated keys (src/api/key-cache.ts). Any change to a key (revocation)
-- or to a project's plan is announced on channel tollgate_auth_changes with the project id, so
-- every process drops what it cached for that project at once, whoever made the change (API, CLI,
-- psql).
CREATE FUNCTION tollgate_notify_auth_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- Separate branches: PL/pgSQL resolves OLD's fields only in the branch that runs.
  IF TG_TABLE_NAME = 'projects' THEN
    PERFORM pg_notify('tollgate_auth_changes', OLD.id);
  ELSE
    PERFORM pg_notify('tollgate_auth_changes', OLD.project_id);
  END IF;
  RETURN NULL;
END;
$$;
CREATE TRIGGER api_keys_auth_change AFTER UPDATE OR DELETE ON api_keys
  FOR EACH ROW EXECUTE FUNCTION tollgate_notify_auth_change();
CREATE TRIGGER projects_auth_change AFTER UPDATE OF plan OR DELETE ON projects
  FOR EACH ROW EXECUTE FUNCTION tollgate_notify_auth_change();

-- Down Migration
DROP TRIGGER projects_auth_change ON projects;
DROP TRIGGER api_keys_auth_change ON api_keys;
DROP FUNCTION tollgate_notify_auth_change();
