-- Up Migration

-- A project's own provider keys (issue 16), envelope-encrypted (src/crypto/envelope.ts): the secret
-- under a random data key, the data key wrapped by the key-encryption key `kek_id`. Only the last
-- four characters are kept in clear, for listings.
CREATE TABLE project_provider_keys (
  project_id        text NOT NULL REFERENCES projects(id),
  provider          text NOT NULL,
  kek_id            text NOT NULL,
  wrapped_key       bytea NOT NULL,
  ciphertext        bytea NOT NULL,
  last_four         text NOT NULL,
  created_by        text,
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now(),
  last_test_at      timestamptz,
  last_test_status  text CHECK (last_test_status IN ('ok', 'failed')),
  last_test_error   text,
  PRIMARY KEY (project_id, provider)
);
CREATE INDEX project_provider_keys_kek_idx ON project_provider_keys (kek_id);

-- API processes cache decrypted project keys next to authenticated API keys; a change is announced
-- on the same channel (tollgate_auth_changes, migration 0101) so every process drops them at once.
CREATE FUNCTION tollgate_notify_provider_key_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    PERFORM pg_notify('tollgate_auth_changes', OLD.project_id);
  ELSE
    PERFORM pg_notify('tollgate_auth_changes', NEW.project_id);
  END IF;
  RETURN NULL;
END;
$$;
CREATE TRIGGER project_provider_keys_change AFTER INSERT OR UPDATE OF kek_id, wrapped_key, ciphertext OR DELETE ON project_provider_keys
  FOR EACH ROW EXECUTE FUNCTION tollgate_notify_provider_key_change();

-- Down Migration
DROP TRIGGER project_provider_keys_change ON project_provider_keys;
DROP FUNCTION tollgate_notify_provider_key_change();
DROP TABLE project_provider_keys;
