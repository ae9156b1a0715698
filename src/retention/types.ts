/** What a retention run (src/retention/run.ts) and its steps take. */
import type { Config } from '../config';
import type { Db } from '../db/pool';

export interface RetentionDeps {
  db: Db;
  config: Pick<Config, 'env' | 'masterKey' | 'databaseUrl' | 'retention' | 'archiveStore'>;
}

export interface RetentionOptions {
  /** One project (an operator's run, e.g. an account closing); default: every project with a retention. */
  projectId?: string;
  /** Cutoff instead of now − the retention (applies to every project the run covers). */
  before?: Date;
  now: Date;
  /** Rows per delete statement. */
  batchSize?: number;
  /** Whether an archive's row parts are written in a worker thread (default: from 5,000 leaves, on a machine of four cores or more). */
  rowsInWorker?: boolean;
  /**
   * Called after each step (`uploading`: after each piece of the archive handed to the store); a
   * test throws from it to stop a run there, as a killed process would.
   */
  onStep?: (step: 'uploading' | 'archived' | 'verified' | 'batch', archiveId: string) => void | Promise<void>;
}

export interface ProjectRetention {
  project_id: string;
  cutoff: string | null;
  /** `locked`: another process is running retention for the project. */
  outcome: 'archived' | 'nothing_to_archive' | 'no_retention' | 'locked';
  archive: ArchiveView | null;
  /** Milliseconds spent in each step for this project (a step not run this time is absent). */
  phases_ms: Partial<Record<'plan' | 'write' | 'verify' | 'delete', number>>;
}

export interface RetentionReport {
  object: 'retention_run';
  projects: ProjectRetention[];
  /** Week partitions dropped once every project's retention had passed them and every row they held was archived. */
  partitions_dropped: string[];
  /** Week partitions past every project's retention that stay this round, each with the first reason found (a row not archived yet, or its table busy). */
  partitions_kept: { partition: string; reason: string }[];
  /**
   * Milliseconds of the run's steps over all projects, and of the partitions' drop: `drop` in all,
   * `drop_locked` with the parent tables held exclusively (the calls wait that long), over
   * `drop_tries` tries at their locks.
   */
  phases_ms: Record<'scope' | 'plan' | 'write' | 'verify' | 'delete' | 'drop' | 'drop_locked', number> & { drop_tries: number };
}

export interface ArchiveView {
  id: string;
  object: 'archive';
  project_id: string;
  status: string;
  window: { since: string; until: string };
  log_range: { first_index: number; last_index: number; checkpoint_size: number };
  /** Where the archive is: a file path, or an s3:// URL. */
  path: string;
  sha256: string | null;
  bytes: number | null;
  deleted: Record<string, number>;
}
