-- Up Migration

-- The call record's column naming its intent takes the glossary's name (docs/architecture.md):
-- `calls.workflow_intent_id` becomes `intent_id`, its partial index `calls_project_intent_idx`, and
-- each week's copy of that index `<partition>_project_id_intent_id_created_at_idx` (the partition's
-- name and the columns', as PostgreSQL derives a copy's name; a week's or the DEFAULT partition's
-- name is short enough not to be truncated). The index keeps its columns' old names inside it,
-- which ATTACH would name a new week's copy from: src/db/partitions.ts creates each copy on the
-- new week first, named from the table's columns. Any index or constraint of
-- calls, permits, intents or intent_amendments (or of their partitions) still named after the old
-- tables `executions` or `workflow_intents` is renamed too, found by name at run time. The rows stay.
--
-- A call record's hashed leaf keeps the member `workflow_intent_id` (src/executions/record-leaf.ts
-- maps the column to it), so every leaf chained before this migration still verifies. The SQL
-- functions write the rows the application hands them (`jsonb_populate_record`), by column name.

DO $$
DECLARE
  r record;
BEGIN
  ALTER TABLE calls RENAME COLUMN workflow_intent_id TO intent_id;
  ALTER INDEX calls_project_workflow_idx RENAME TO calls_project_intent_idx;
  FOR r IN SELECT c.relname AS index_name, t.relname AS table_name
             FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_index x ON x.indexrelid = c.oid JOIN pg_class t ON t.oid = x.indrelid
            WHERE i.inhparent = 'calls_project_intent_idx'::regclass LOOP
    EXECUTE format('ALTER INDEX %I RENAME TO %I', r.index_name, r.table_name || '_project_id_intent_id_created_at_idx');
  END LOOP;
  -- Indexes first: a primary or unique key's index renames its constraint with it.
  FOR r IN SELECT c.relname AS old_name FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid
            WHERE (x.indrelid IN ('calls'::regclass, 'permits'::regclass, 'intents'::regclass, 'intent_amendments'::regclass)
                   OR x.indrelid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent IN ('calls'::regclass, 'permits'::regclass)))
              AND c.relname ~ '(executions|workflow_intent)' LOOP
    EXECUTE format('ALTER INDEX %I RENAME TO %I', r.old_name,
                   replace(replace(replace(r.old_name, 'executions', 'calls'), 'workflow_intents', 'intents'), 'workflow_intent_id', 'intent_id'));
  END LOOP;
  -- Check constraints renamed on a table are renamed in its partitions; a partition's copy of a
  -- foreign key is a constraint of its own.
  FOR r IN SELECT k.conrelid::regclass AS rel, k.conname FROM pg_constraint k
            WHERE ((k.conrelid IN ('calls'::regclass, 'permits'::regclass, 'intents'::regclass, 'intent_amendments'::regclass) AND k.contype IN ('c', 'f'))
                   OR (k.conrelid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent IN ('calls'::regclass, 'permits'::regclass)) AND k.contype = 'f'))
              AND k.conname ~ '(executions|workflow_intent)' LOOP
    EXECUTE format('ALTER TABLE %s RENAME CONSTRAINT %I TO %I', r.rel, r.conname,
                   replace(replace(replace(r.conname, 'executions', 'calls'), 'workflow_intents', 'intents'), 'workflow_intent_id', 'intent_id'));
  END LOOP;
END
$$;

-- Down Migration

-- Back to the column's and index's old names (each week's copy named as PostgreSQL names it for
-- the old column). Names of other indexes and constraints the Up step found still named after the
-- old tables are not restored: those tables were renamed long before, and no code reads the names.
DO $$
DECLARE
  r record;
BEGIN
  ALTER TABLE calls RENAME COLUMN intent_id TO workflow_intent_id;
  ALTER INDEX calls_project_intent_idx RENAME TO calls_project_workflow_idx;
  FOR r IN SELECT c.relname AS index_name, t.relname AS table_name
             FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_index x ON x.indexrelid = c.oid JOIN pg_class t ON t.oid = x.indrelid
            WHERE i.inhparent = 'calls_project_workflow_idx'::regclass LOOP
    EXECUTE format('ALTER INDEX %I RENAME TO %I', r.index_name, r.table_name || '_project_id_workflow_intent_id_created_at_idx');
  END LOOP;
END
$$;
