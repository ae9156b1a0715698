import { listLogEvents, requestTimeline } from '../../../src/db/repositories/log-events';
import { inFlightEvents } from '../../../src/executions/lifecycle-events';
import type { PermitColumns } from '../../../src/executions/lifecycle';
import { startEmulator, EmulatorHandle } from '../../../emulator/server';
import { createTestProject, http, startTestTollgate, TestProject } from '../../support/tollgate';

export type TestTollgate = Awaited<ReturnType<typeof startTestTollgate>>;

/** Env pointing every provider at the emulator. */
export function emulatorEnv(url: string): NodeJS.ProcessEnv {
  return {
    OPENAI_BASE_URL: `${url}/openai`,
    OPENAI_API_KEY: 'test-openai',
    ANTHROPIC_BASE_URL: `${url}/anthropic`,
    ANTHROPIC_API_KEY: 'test-anthropic',
    GEMINI_BASE_URL: `${url}/google`,
    GEMINI_API_KEY: 'test-gemini',
    DEEPSEEK_BASE_URL: `${url}/deepseek`,
    DEEPSEEK_API_KEY: 'test-deepseek',
    MISTRAL_BASE_URL: `${url}/mistral`,
    MISTRAL_API_KEY: 'test-mistral',
  };
}

export interface Harness {
  emu: EmulatorHandle;
  tg: TestTollgate;
  call: ReturnType<typeof http>;
  project(): Promise<TestProject>;
  close(): Promise<void>;
}

export async function startHarness(env: NodeJS.ProcessEnv = {}): Promise<Harness> {
  const emu = await startEmulator({ port: 0 });
  const tg = await startTestTollgate({ env: { ...emulatorEnv(emu.url), ...env } });
  return {
    emu,
    tg,
    call: http(tg.url!),
    project: () => createTestProject(tg.db),
    async close() {
      await tg.close();
      await emu.close();
    },
  };
}

export const say = (text: string) => [{ role: 'user', content: text }];

/** A request's event types in order: stored rows and those derived from its call record (its timeline's). */
export async function eventTypes(tg: TestTollgate, projectId: string, requestId: string): Promise<string[]> {
  return ((await requestTimeline(tg.db, projectId, requestId)).events).map((e) => e.event_type);
}

/** A request of the project whose provider.request_sent is logged (stored, derived from its record, or of a call in flight). */
export async function sentRequest(db: TestTollgate['db'], projectId: string): Promise<{ request_id: string }> {
  const { rows } = await db.query<{ request_id: string }>('SELECT DISTINCT request_id FROM permits WHERE project_id = $1 AND request_id IS NOT NULL', [projectId]);
  for (const r of rows) if (((await requestTimeline(db, projectId, r.request_id)).events).some((e) => e.event_type === 'provider.request_sent')) return r;
  throw new Error(`no request of ${projectId} has provider.request_sent`);
}

/** How many events of a type the project has: in its log (stored rows and derived from call records) and of calls in flight. */
export async function countEvents(tg: Pick<TestTollgate, 'db'>, projectId: string, eventType: string): Promise<number> {
  const logged = await listLogEvents(tg.db, projectId, { eventTypes: [eventType], order: 'asc', limit: 10_000 });
  const { rows: running } = await tg.db.query<PermitColumns>('SELECT * FROM permits WHERE project_id = $1 AND closing IS NOT NULL', [projectId]);
  return logged.length + running.flatMap((p) => inFlightEvents(p)).filter((e) => e.event_type === eventType).length;
}

/** Sets the project's policy with the admin key (PATCH /v1/projects/:id/policy, merge patch). */
export async function patchPolicy(h: Harness, p: TestProject, patch: unknown): Promise<void> {
  const res = await h.call('PATCH', `/v1/projects/${p.project.id}/policy`, { key: p.adminKey, body: patch });
  if (res.status !== 200) throw new Error(`policy patch failed: ${res.status} ${res.text}`);
}

/** Reads an SSE response into records. */
export function parseSse(text: string): { event: string; data: any }[] {
  return text
    .split('\n\n')
    .filter((b) => b.trim())
    .map((block) => {
      const event = /^event: (.*)$/m.exec(block)?.[1] ?? 'message';
      const data = block
        .split('\n')
        .filter((l) => l.startsWith('data: '))
        .map((l) => l.slice(6))
        .join('\n');
      return { event, data: data ? JSON.parse(data) : null };
    });
}
