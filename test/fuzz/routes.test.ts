/**
 * Property-based fuzzing of every /v1 route in the OpenAPI route table (issue 13): bodies and
 * queries derived from the routes' zod schemas (through their JSON Schema), mixed with hostile
 * mutations. Every answer: never a 500, every error in the documented shape (provider-native on
 * the proxies). FUZZ_BODIES sets the number of bodies per run (default 3,000); FUZZ_SEED replays a
 * run (fast-check prints the seed and the shrunk counterexample of a failure).
 */
import fc from 'fast-check';
import { startHarness, Harness } from '../e2e/executions/helpers';
import type { TestProject } from '../support/tollgate';
import { answerProblems, describeAnswer } from './answers';
import { createFixtures, Fixtures } from './fixtures';
import { startTestMcpServer, type TestMcpServer } from '../integration/mcp/mcp-server';
import { bodySchemaOf, caseArb, send } from './requests';
import { v1Routes } from './route-list';

// A sixth of the cases send no key: the per-address failed-authentication limit must not turn the rest into 429s.
process.env.AUTH_FAILURE_BURST = '100000';

const BODIES = Number(process.env.FUZZ_BODIES ?? 3000);
/** Runs per route without a body (query and path parameters only). */
const READ_RUNS = Number(process.env.FUZZ_READ_RUNS ?? 15);
const CONCURRENCY = 4;
const DEFAULT_SEED = 20261124;
const seedSetting = process.env.FUZZ_SEED ?? String(DEFAULT_SEED);
const seedOption = seedSetting === 'random' ? {} : { seed: Number(seedSetting) };

describe('fuzz: every /v1 route', () => {
  let h: Harness;
  let p: TestProject;
  let ids: Fixtures;
  let mcp: TestMcpServer;
  beforeAll(async () => {
    h = await startHarness({ WEBHOOK_ALLOWED_HOSTS: '127.0.0.1/32' });
    mcp = await startTestMcpServer();
    p = await h.project();
    ids = await createFixtures(h, p, { mcpUrl: mcp.url });
  }, 120_000);
  afterAll(async () => {
    await h?.close();
    await mcp?.close();
  });

  it(`${BODIES} bodies across the routes: no 500, every error in the documented shape`, async () => {
    const routes = v1Routes();
    const withBody = routes.filter((r) => bodySchemaOf(r));
    const bodyRuns = Math.ceil(BODIES / withBody.length);
    fc.configureGlobal({ numRuns: READ_RUNS, endOnFailure: true, ...seedOption });
    const counts = { requests: 0, bodies: 0, byStatus: new Map<number, number>() };
    const failures: string[] = [];
    const queue = [...routes];
    const worker = async () => {
      for (let route = queue.shift(); route; route = queue.shift()) {
        const r = route;
        const runs = bodySchemaOf(r) ? bodyRuns : READ_RUNS;
        const result = await fc.check(
          fc.asyncProperty(caseArb(r, ids), async (c) => {
            const answer = await send(h.tg.url!, r.method, c, { admin: p.adminKey, client: p.clientKey });
            counts.requests += 1;
            if (c.body) counts.bodies += 1;
            counts.byStatus.set(answer.status, (counts.byStatus.get(answer.status) ?? 0) + 1);
            const problems = answerProblems(answer);
            if (problems.length) throw new Error(`${problems.join('; ')}: ${describeAnswer(answer)}`);
          }),
          { numRuns: runs },
        );
        if (result.failed) failures.push(`${r.method.toUpperCase()} ${r.path}: ${fc.defaultReportMessage(result)?.slice(0, 3000)}`);
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    process.stdout.write(
      `fuzz: ${routes.length} routes, ${counts.requests} requests, ${counts.bodies} bodies; statuses ${JSON.stringify(Object.fromEntries([...counts.byStatus].sort((a, b) => a[0] - b[0])))}\n`,
    );
    expect(failures).toEqual([]);
    expect(counts.bodies).toBeGreaterThanOrEqual(BODIES);
  }, 900_000);
});
