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
