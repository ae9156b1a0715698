import { randomUUID } from 'node:crypto';
import { loadConfig, Config } from '../../src/config';
import { Clock } from '../../src/clock';
import { startTollgate, Tollgate } from '../../src/server';
import { createProject, Plan, Project } from '../../src/db/repositories/projects';
import { createApiKey } from '../../src/db/repositories/api-keys';
import type { Db } from '../../src/db/pool';
import { testLogger, testLogLevel } from './test-logs';
import { assertDocumentedResponse } from './openapi-responses';

/** Configuration for an in-process Tollgate against the run's database and Temporal server. */
export function testConfig(overrides: NodeJS.ProcessEnv = {}): Config {
  return loadConfig({
    ...process.env,
    NODE_ENV: 'test',
    HOST: '127.0.0.1',
    PORT: '0',
    LOG_LEVEL: testLogLevel(),
    TEMPORAL_TASK_QUEUE: `test-${randomUUID()}`,
    // Off unless a test turns it on: a fan-out would deliver other files' subscriptions on its own task queue.
    WEBHOOK_FANOUT: 'off',
    ...overrides,
  });
}

/**
 * A Tollgate (API + worker) on a private task queue, so test files never pick up each other's
 * workflow tasks. Close it in afterAll.
 */
export async function startTestTollgate(opts: { env?: NodeJS.ProcessEnv; clock?: Clock; role?: 'api' | 'worker' | 'all' } = {}): Promise<Tollgate & { config: Config }> {
  const config = testConfig({ ...(opts.role ? { TOLLGATE_ROLE: opts.role } : {}), ...opts.env });
  const tollgate = await startTollgate({
    config,
    clock: opts.clock,
    logger: testLogger(config.logLevel),
    startMaintenance: false,
    temporalRetryMs: 10_000,
  });
  return Object.assign(tollgate, { config });
}

export interface TestProject {
  project: Project;
  clientKey: string;
  adminKey: string;
}

/** Each test makes its own project, so tests run in parallel and in any order. */
export async function createTestProject(db: Db, plan: Plan = 'production'): Promise<TestProject> {
  const project = await createProject(db, { name: `test-${randomUUID()}`, plan });
  const { key: clientKey } = await createApiKey(db, { projectId: project.id, scope: 'client' });
  const { key: adminKey } = await createApiKey(db, { projectId: project.id, scope: 'admin' });
  return { project, clientKey, adminKey };
}

/** fetch against a base URL with JSON helpers. */
export function http(baseUrl: string) {
  return async (
    method: string,
    path: string,
    opts: { key?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> } = {},
  ) => {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.key) headers.authorization = `Bearer ${opts.key}`;
    let body: string | undefined;
    if (opts.rawBody !== undefined) body = opts.rawBody;
    else if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers['content-type'] ??= 'application/json';
    }
    const res = await fetch(baseUrl + path, { method, headers, body });
    const text = await res.text();
    let json: any = undefined;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      /* not JSON */
    }
    // Every response is checked against the OpenAPI document (test/support/openapi-responses.ts).
    assertDocumentedResponse(method, path, res.status, res.headers.get('content-type'), json);
    return { status: res.status, headers: res.headers, text, json };
  };
}
