/**
 * Projects' own provider keys: store (envelope-encrypted), list (last four, status, last test),
 * delete, test with a minimal real call through the provider adapter, and re-wrap every data key
 * under the active key-encryption key (CLI `provider-keys rotate-kek`). A key never appears in a
 * response or a log line.
 */
import type { Config, ProviderId } from '../config';
import { PROVIDER_IDS } from '../config';
import type { Db, Queryable } from '../db/pool';
import {
  deleteProviderKey,
  findProviderKey,
  listProviderKeys,
  countProviderKeysUnknownKek,
  providerKeysNotUnder,
  recordProviderKeyTest,
  rewrapProviderKey,
  upsertProviderKey,
  type ProviderKeyRow,
} from '../db/repositories/provider-keys';
import { loadKeyring, openSecret, providerKeyContext, rewrapSecret, sealSecret } from '../crypto/envelope';
import { ProviderError, type ProviderGateway } from '../providers/types';

/** The cheapest chat model of each provider: what a key test asks for one output token of. */
export const TEST_MODELS: Record<ProviderId, string> = {
  openai: 'gpt-4o-mini',
  anthropic: 'claude-haiku-4-5',
  google: 'gemini-2.0-flash',
  deepseek: 'deepseek-chat',
  mistral: 'mistral-small-latest',
};

type KeyConfig = Pick<Config, 'env' | 'masterKey' | 'providerKeyKeks' | 'providers'>;

const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);

function providerView(projectId: string, provider: ProviderId, row: ProviderKeyRow | undefined, config: KeyConfig) {
  return {
    object: 'project_provider',
    project_id: projectId,
    provider,
    // project: the project's own key is used; deployment: the operator's key; none: no key at all.
    key_source: row ? 'project' : config.providers[provider]?.apiKey ? 'deployment' : 'none',
    key: row
      ? {
          last_four: row.last_four,
          status: row.last_test_status === 'failed' ? 'failing' : row.last_test_status === 'ok' ? 'verified' : 'untested',
          kek_id: row.kek_id,
          created_by: row.created_by,
          created_at: iso(row.created_at),
          updated_at: iso(row.updated_at),
          last_test: row.last_test_at ? { at: iso(row.last_test_at), outcome: row.last_test_status, error: row.last_test_error } : null,
        }
      : null,
  };
}

export async function listProviders(db: Queryable, config: KeyConfig, projectId: string) {
  const rows = new Map((await listProviderKeys(db, projectId)).map((r) => [r.provider, r]));
  return { object: 'list', data: PROVIDER_IDS.map((p) => providerView(projectId, p, rows.get(p), config)), next_cursor: null };
}

export async function setProviderKey(db: Queryable, config: KeyConfig & { databaseUrl: string }, input: { projectId: string; provider: ProviderId; apiKey: string; actor: string }) {
  const ring = await loadKeyring(db, config);
  const sealed = sealSecret(ring, input.apiKey, providerKeyContext(input.projectId, input.provider));
  const row = await upsertProviderKey(db, {
    projectId: input.projectId,
    provider: input.provider,
    kekId: sealed.kekId,
    wrappedKey: sealed.wrappedKey,
    ciphertext: sealed.ciphertext,
    lastFour: input.apiKey.slice(-4),
    createdBy: input.actor,
  });
  return providerView(input.projectId, input.provider, row, config);
}

export async function removeProviderKey(db: Queryable, config: KeyConfig, input: { projectId: string; provider: ProviderId }) {
  const deleted = await deleteProviderKey(db, input.projectId, input.provider);
  return { deleted, provider: providerView(input.projectId, input.provider, undefined, config) };
}

/**
 * One-token call through the provider adapter with the project's key (or the deployment's when
 * the project has none), recorded on the project's key row. The provider's error message is kept
 * without the key (adapters never echo it; it is scrubbed anyway).
 */
export async function testProviderKey(
  db: Queryable,
  config: KeyConfig & { databaseUrl: string },
  providers: ProviderGateway,
  input: { projectId: string; provider: ProviderId },
) {
  const row = await findProviderKey(db, input.projectId, input.provider);
  let apiKey: string | undefined;
  if (row) {
    const ring = await loadKeyring(db, config);
    apiKey = openSecret(ring, { kekId: row.kek_id, wrappedKey: row.wrapped_key, ciphertext: row.ciphertext }, providerKeyContext(input.projectId, input.provider));
  }
  const started = Date.now();
  let ok = true;
  let error: string | null = null;
  let status: number | null = null;
  try {
    await providers.dispatch(
      { operation: 'generate.text', provider: input.provider, model: TEST_MODELS[input.provider], messages: [{ role: 'user', content: 'ping' }], parameters: { max_output_tokens: 1 }, stream: false },
      { ...(apiKey ? { credentials: { apiKey } } : {}), signal: AbortSignal.timeout(15_000) },
    );
  } catch (err) {
    ok = false;
    status = err instanceof ProviderError ? err.failure.status : null;
    error = (err instanceof ProviderError ? err.failure.message : (err as Error).message).slice(0, 500);
    if (apiKey) error = error.split(apiKey).join('[redacted]');
  }
  const updated = row ? await recordProviderKeyTest(db, { projectId: input.projectId, provider: input.provider, ok, error }) : null;
  return {
    object: 'provider_key_test',
    project_id: input.projectId,
    provider: input.provider,
    key_source: row ? 'project' : config.providers[input.provider]?.apiKey ? 'deployment' : 'none',
    model: TEST_MODELS[input.provider],
    outcome: ok ? 'ok' : 'failed',
    upstream_status: status,
    error,
    latency_ms: Date.now() - started,
    tested_at: iso(updated?.last_test_at ?? new Date()),
  };
}

/** Re-wraps every data key not under the active KEK (secrets untouched); returns counts. */
export async function rotateProviderKeyKek(db: Db, config: KeyConfig & { databaseUrl: string }) {
  const ring = await loadKeyring(db, config);
  let rewrapped = 0;
  let skipped = 0;
  for (;;) {
    const rows = await providerKeysNotUnder(db, ring.activeKid, [...ring.keys.keys()], 200);
    if (rows.length === 0) break;
    let progressed = false;
    for (const row of rows) {
      const sealed = { kekId: row.kek_id, wrappedKey: row.wrapped_key, ciphertext: row.ciphertext };
      const next = rewrapSecret(ring, sealed, providerKeyContext(row.project_id, row.provider));
      const done = await rewrapProviderKey(db, { projectId: row.project_id, provider: row.provider, fromKid: row.kek_id, fromWrapped: row.wrapped_key, kekId: next.kekId, wrappedKey: next.wrappedKey });
      if (done) rewrapped += 1;
      else skipped += 1; // replaced concurrently (a PUT seals under the active KEK already)
      progressed = true;
    }
    if (!progressed) break;
  }
  // Rows under a KEK no longer configured cannot be opened: named, not silently left behind.
  const unknownKek = await countProviderKeysUnknownKek(db, [...ring.keys.keys()]);
  return { object: 'kek_rotation', active_kek_id: ring.activeKid, rewrapped, skipped, unknown_kek_rows: unknownKek };
}
