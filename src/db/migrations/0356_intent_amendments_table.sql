-- Up Migration

-- The intent amendments' table takes the glossary's name (docs/architecture.md), as the intents'
-- table did: `workflow_intent_amendments` becomes `intent_amendments`, with its indexes (the primary
-- key and the unique key rename their constraints) and its foreign-key constraints. The rows stay as
-- they are. No SQL function, view or trigger names the table. The names the API and stored records
-- carry (the amendment's JSON fields, the `workflow_intent.*` codes) are not the table's and stay.
--
-- OR REPLACE: migrations run in one session, where the earlier rename already created the function.
CREATE OR REPLACE FUNCTION pg_temp.rename_table_family(p_old text, p_new text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  r record;
  parent regclass;
BEGIN
  EXECUTE format('ALTER TABLE %I RENAME TO %I', p_old, p_new);
  parent := p_new::regclass;
  -- Check constraints are renamed on the table, which renames them in every partition; the
  -- partitions' copies of a foreign key are constraints of their own, renamed one by one.
  FOR r IN SELECT conname FROM pg_constraint
            WHERE conrelid = parent AND contype IN ('c', 'f') AND starts_with(conname, p_old || '_') LOOP
    EXECUTE format('ALTER TABLE %s RENAME CONSTRAINT %I TO %I', parent, r.conname, p_new || substr(r.conname, length(p_old) + 1));
  END LOOP;
  FOR r IN SELECT k.conrelid::regclass AS rel, k.conname FROM pg_constraint k JOIN pg_inherits i ON i.inhrelid = k.conrelid
            WHERE i.inhparent = parent AND k.contype = 'f' AND starts_with(k.conname, p_old || '_') LOOP
    EXECUTE format('ALTER TABLE %s RENAME CONSTRAINT %I TO %I', r.rel, r.conname, p_new || substr(r.conname, length(p_old) + 1));
  END LOOP;
  -- The indexes of the table and its partitions (a primary key's index renames its constraint).
  FOR r IN SELECT c.relname FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid
            WHERE (x.indrelid = parent OR x.indrelid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = parent))
              AND starts_with(c.relname, p_old || '_') LOOP
    EXECUTE format('ALTER INDEX %I RENAME TO %I', r.relname, p_new || substr(r.relname, length(p_old) + 1));
  END LOOP;
  FOR r IN SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
            WHERE i.inhparent = parent AND starts_with(c.relname, p_old || '_') LOOP
    EXECUTE format('ALTER TABLE %I RENAME TO %I', r.relname, p_new || substr(r.relname, length(p_old) + 1));
  END LOOP;
END
$$;

SELECT pg_temp.rename_table_family('workflow_intent_amendments', 'intent_amendments');

-- Down Migration

CREATE OR REPLACE FUNCTION pg_temp.rename_table_family(p_old text, p_new text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  r record;
  parent regclass;
BEGIN
  EXECUTE format('ALTER TABLE %I RENAME TO %I', p_old, p_new);
  parent := p_new::regclass;
  -- Check constraints are renamed on the table, which renames them in every partition; the
  -- partitions' copies of a foreign key are constraints of their own, renamed one by one.
  FOR r IN SELECT conname FROM pg_constraint
            WHERE conrelid = parent AND contype IN ('c', 'f') AND starts_with(conname, p_old || '_') LOOP
    EXECUTE format('ALTER TABLE %s RENAME CONSTRAINT %I TO %I', parent, r.conname, p_new || substr(r.conname, length(p_old) + 1));
  END LOOP;
  FOR r IN SELECT k.conrelid::regclass AS rel, k.conname FROM pg_constraint k JOIN pg_inherits i ON i.inhrelid = k.conrelid
            WHERE i.inhparent = parent AND k.contype = 'f' AND starts_with(k.conname, p_old || '_') LOOP
    EXECUTE format('ALTER TABLE %s RENAME CONSTRAINT %I TO %I', r.rel, r.conname, p_new || substr(r.conname, length(p_old) + 1));
  END LOOP;
  -- The indexes of the table and its partitions (a primary key's index renames its constraint).
  FOR r IN SELECT c.relname FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid
            WHERE (x.indrelid = parent OR x.indrelid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = parent))
              AND starts_with(c.relname, p_old || '_') LOOP
    EXECUTE format('ALTER INDEX %I RENAME TO %I', r.relname, p_new || substr(r.relname, length(p_old) + 1));
  END LOOP;
  FOR r IN SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
            WHERE i.inhparent = parent AND starts_with(c.relname, p_old || '_') LOOP
    EXECUTE format('ALTER TABLE %I RENAME TO %I', r.relname, p_new || substr(r.relname, length(p_old) + 1));
  END LOOP;
END
$$;

SELECT pg_temp.rename_table_family('intent_amendments', 'workflow_intent_amendments');
