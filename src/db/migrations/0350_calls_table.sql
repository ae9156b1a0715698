-- Up Migration

-- The call record's table takes the glossary's name (docs/architecture.md): `executions` becomes
-- `calls`. Everything named after the table is renamed with it: its week partitions and DEFAULT
-- partition (src/db/partitions.ts names them `<table>_w<Monday>` and finds them by that name), the
-- indexes of the table and of each partition (primary keys with their constraints), and its check
-- and foreign-key constraints. The rows, the ids and the partition bounds stay as they are.
--
-- The SQL functions that read or write the table are replaced right after this migration by the
-- function step (src/db/apply-functions.ts), their files naming the new table; the route label
-- `executions` stored in the rows and permits is the API's route name and stays.

CREATE FUNCTION pg_temp.rename_table_family(p_old text, p_new text) RETURNS void
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

SELECT pg_temp.rename_table_family('executions', 'calls');

-- Down Migration

-- The functions' files name `calls`: after migrating down, delete their rows from db_functions and
-- apply the older files (src/db/functions/README.md).
CREATE FUNCTION pg_temp.rename_table_family(p_old text, p_new text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  r record;
  parent regclass;
BEGIN
  EXECUTE format('ALTER TABLE %I RENAME TO %I', p_old, p_new);
  parent := p_new::regclass;
  FOR r IN SELECT conname FROM pg_constraint
            WHERE conrelid = parent AND contype IN ('c', 'f') AND starts_with(conname, p_old || '_') LOOP
    EXECUTE format('ALTER TABLE %s RENAME CONSTRAINT %I TO %I', parent, r.conname, p_new || substr(r.conname, length(p_old) + 1));
  END LOOP;
  FOR r IN SELECT k.conrelid::regclass AS rel, k.conname FROM pg_constraint k JOIN pg_inherits i ON i.inhrelid = k.conrelid
            WHERE i.inhparent = parent AND k.contype = 'f' AND starts_with(k.conname, p_old || '_') LOOP
    EXECUTE format('ALTER TABLE %s RENAME CONSTRAINT %I TO %I', r.rel, r.conname, p_new || substr(r.conname, length(p_old) + 1));
  END LOOP;
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

SELECT pg_temp.rename_table_family('calls', 'executions');
