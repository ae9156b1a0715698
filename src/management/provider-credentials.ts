/**
 * Projects' own provider keys, decrypted and cached per process so a governed call spends no
 * database round trip on them: the first call of a project reads all of its keys once (a project
 * without keys is cached as such), later calls are served from memory until PostgreSQL announces a
 * change on `tollgate_auth_changes` (migration 0131; one listening connection per process, shared
 * with the API key cache: src/server.ts) or the entry's TTL passes. While the listener is down, every lookup reads the database.
 */
import type { Db } from '../db/pool';
import type { NoticeChannel } from '../db/notice-listener';
import type { Logger } from '../logger';
import { listProviderKeys } from '../db/repositories/provider-keys';
import { loadKeyring, openSecret, providerKeyContext, type Keyring } from '../crypto/envelope';
import type { ProviderGatewayWithClose } from '../providers';
import type { ProviderGateway } from '../providers/types';

export interface ProjectProviderKeys {
  /** The project's own key for `provider`, or undefined (the deployment's key applies). */
  get(projectId: string, provider: string): Promise<string | undefined>;
  invalidate(projectId: string): void;
  close(): Promise<void>;
}

const MAX_PROJECTS = 20_000;

export function createProjectProviderKeys(deps: {
  db: Db;
  logger: Logger;
  config: { env: string; masterKey?: string; providerKeyKeks?: string };
  /** The process's `tollgate_auth_changes` channel; without one nothing is cached. */
  authChanges: NoticeChannel | null;
  ttlMs?: number;
}): ProjectProviderKeys {
  const ttlMs = deps.ttlMs ?? 60_000;
  const entries = new Map<string, { keys: Map<string, string>; expires: number }>();
  let ring: Promise<Keyring> | null = null;
  let generation = 0;

  const keyring = () => {
    ring ??= loadKeyring(deps.db, deps.config);
    ring.catch(() => (ring = null));
    return ring;
  };
  const drop = (projectId: string) => {
    generation += 1;
    entries.delete(projectId);
  };

  async function load(projectId: string): Promise<Map<string, string>> {
    const rows = await listProviderKeys(deps.db, projectId);
    const out = new Map<string, string>();
    if (rows.length === 0) return out;
    const r = await keyring();
    for (const row of rows) {
      try {
        out.set(row.provider, openSecret(r, { kekId: row.kek_id, wrappedKey: row.wrapped_key, ciphertext: row.ciphertext }, providerKeyContext(projectId, row.provider)));
      } catch (err) {
        // Never the key itself: which row, and why it did not open.
        deps.logger.error({ project_id: projectId, provider: row.provider, kek_id: row.kek_id, err: (err as Error).message }, 'project provider key does not decrypt; the deployment key is used');
      }
    }
    return out;
  }

  const listener = deps.authChanges;
  const unsubscribe = listener?.subscribe({
    onNotice: drop,
    onLost: () => entries.clear(),
    onListening: () => {
      entries.clear();
      generation += 1;
    },
  });
  const listening = () => listener?.listening ?? false;

  return {
    async get(projectId, provider) {
      const now = Date.now();
      const hit = entries.get(projectId);
      if (hit && hit.expires > now && listening()) return hit.keys.get(provider);
      const seen = generation;
      const keys = await load(projectId);
      if (listening() && seen === generation) {
        if (entries.size >= MAX_PROJECTS) entries.clear();
        entries.set(projectId, { keys, expires: now + ttlMs });
      }
      return keys.get(provider);
    },
    invalidate: drop,
    close: async () => unsubscribe?.(),
  };
}

/** A gateway that dispatches with the project's own key when it has one (DispatchOptions.projectId). */
export function withProjectProviderKeys(inner: ProviderGatewayWithClose, keys: Pick<ProjectProviderKeys, 'get'>): ProviderGatewayWithClose {
  const dispatch: ProviderGateway['dispatch'] = async (req, opts = {}) => {
    if (opts.projectId && !opts.credentials?.apiKey) {
      const apiKey = await keys.get(opts.projectId, req.provider);
      if (apiKey) return inner.dispatch(req, { ...opts, credentials: { ...opts.credentials, apiKey } });
    }
    return inner.dispatch(req, opts);
  };
  return { ...inner, dispatch, close: () => inner.close() };
}
