/**
 * Authenticated API keys, cached per process so a governed call spends no database round trip on
 * authentication. Entries are keyed by the key's SHA-256 (the presented secret is never stored),
 * live at most `ttlMs`, and are dropped for a whole project the moment PostgreSQL announces a key
 * or plan change on `tollgate_auth_changes` (migration 0101), so a revocation takes effect at
 * once in every process. While the listener is down, lookups go to the database.
 */
import type { Db } from '../db/pool';
import type { NoticeChannel } from '../db/notice-listener';
import { findApiKeyWithPlan, hashApiKey, type ApiKeyRecord } from '../db/repositories/api-keys';
import type { Plan } from '../db/repositories/projects';

export type KeyRecord = ApiKeyRecord & { plan: Plan };

export interface KeyLookup {
  find(presented: string): Promise<KeyRecord | null>;
  /** Forgets what is cached for a project (this process changed its keys or plan). */
  invalidate(projectId: string): void;
}

export interface KeyCache extends KeyLookup {
  close(): Promise<void>;
}

const MAX_ENTRIES = 50_000;


export function createKeyCache(deps: { db: Db; authChanges: NoticeChannel; ttlMs?: number }): KeyCache {
  const ttlMs = deps.ttlMs ?? 60_000;
  const entries = new Map<string, { record: KeyRecord; expires: number }>();

  // Bumped by every change notice: a record read before a notice is not cached after it.
  let generation = 0;
  const dropProject = (projectId: string) => {
    generation += 1;
    for (const [h, e] of entries) if (e.record.project_id === projectId) entries.delete(h);
  };

  const listener = deps.authChanges;
  const unsubscribe = listener.subscribe({
    onNotice: dropProject,
    onLost: () => entries.clear(),
    // Anything cached before LISTEN took effect may have missed a change.
    onListening: () => {
      entries.clear();
      generation += 1;
    },
  });

  return {
    async find(presented) {
      if (!listener.listening) return findApiKeyWithPlan(deps.db, presented);
      const h = hashApiKey(presented).toString('base64');
      const now = Date.now();
      const hit = entries.get(h);
      if (hit && hit.expires > now) return hit.record;
      const seen = generation;
      const record = await findApiKeyWithPlan(deps.db, presented);
      // Only live keys are cached; unknown and revoked keys always go to the database.
      if (record && !record.revoked_at && listener.listening && seen === generation) {
        if (entries.size >= MAX_ENTRIES) entries.clear();
        entries.set(h, { record, expires: now + ttlMs });
      }
      return record;
    },
    invalidate: dropProject,
    close: async () => unsubscribe(),
  };
}
