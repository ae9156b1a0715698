/**
 * The pipeline's batch statements (tollgate_begin_calls, tollgate_finish_calls) carry the calls of
 * several projects at once and keep each project's spend counters and rate windows apart (migration
 * 0113 keeps them in arrays, one element per project and period or limit). Concurrent governed calls
 * of four projects, each with its own limit, go through the same batches: every project's limit
 * holds on its own and every counter adds up to its project's permits.
 */
import { createGovernedCallActivities } from '../../../activities/governed-call';
import { systemClock } from '../../../src/clock';
import type { Db } from '../../../src/db/pool';
import { updatePolicy } from '../../../src/db/repositories/policies';
import type { ExecutionInput } from '../../../src/executions/types';
import { createGovernance } from '../../../src/governance';
import { newId } from '../../../src/ids';
import { createLogger } from '../../../src/logger';
import { pricing } from '../../../src/pricing';
import type { NormalizedRequest, ProviderGateway } from '../../../src/providers/types';
import { projectWithPolicy, testPool } from '../../unit/governance/helpers';

const PROMPT = 'Count the governed calls of four projects.';

// Reports the usage the estimate assumed (the prompt's tokens, the whole output allowance), so a call
// settles at what it reserved and the budget project's count does not depend on timing.
const provider: ProviderGateway = {
  dispatch: async () => ({
    output: { content: [{ type: 'text', role: 'assistant', text: 'Four.' }] },
    output_assets: [],
    usage: { input_tokens: 15, output_tokens: 1024, total_tokens: 1039, metrics: [], estimated: false },
    finish_reason: 'stop',
  }),
};

describe('batches that span projects (real PostgreSQL)', () => {
  let db: Db;
  beforeAll(() => {
    db = testPool(20);
  });
  afterAll(async () => {
    await db.end();
  });

  it("holds each project's quota, rate limit and budget on its own, and every counter adds up to its permits", async () => {
    const calls = createGovernedCallActivities({ db, clock: systemClock, logger: createLogger('silent'), governance: createGovernance({ db, clock: systemClock }), pricing, providers: provider });
    const governedCall = async (projectId: string): Promise<'allow' | 'deny' | 'throttle' | 'review'> => {
      const input: ExecutionInput = {
        executionId: newId('exec_req'), permitId: newId('permit'), projectId, route: 'executions', mode: 'sync', createdAt: new Date().toISOString(),
        request: { operation: 'generate.text', messages: [{ role: 'user', content: PROMPT }] },
        routing: { requested_provider: 'openai', requested_model: 'gpt-4o-mini', reason_code: 'explicit_request', primary: { provider: 'openai', model: 'gpt-4o-mini' }, fallback: [] },
        workflowIntentId: null, idempotencyKey: null, dispatchTimeoutMs: 60_000, heartbeatTimeoutMs: 0,
      };
      const req: NormalizedRequest = { operation: 'generate.text', provider: 'openai', model: 'gpt-4o-mini', stream: false, messages: input.request.messages };
      const gov = await calls.govern({ input, request: req, route: 'executions', inspectableText: [PROMPT], permitMetadata: {}, inProcess: {} });
      if (gov.decision === 'allow') {
        const { outcome } = await calls.dispatch(input);
        await calls.record(input, { kind: 'dispatched', gov, outcome });
      }
      return gov.decision;
    };

    const quota = await projectWithPolicy(db, { plan_quota: { requests_per_period_override: 10 } });
    const rated = await projectWithPolicy(db, { rate_limits: [{ id: 'per-hour', metric: 'requests', limit: 15, window_seconds: 3600, action: 'throttle' }] });
    const open = await projectWithPolicy(db, {});
    // The budget project: one call first, to learn what a call reserves, then a monthly cap that fits 12.
    const budget = await projectWithPolicy(db, {});
    expect(await governedCall(budget)).toBe('allow');
    const { rows: first } = await db.query<{ reserved: string }>('SELECT reserved_cost_micros AS reserved FROM permits WHERE project_id = $1', [budget]);
    await updatePolicy(db, { projectId: budget, patch: { budgets: { monthly_usd_micros: 12 * Number(first[0].reserved) } }, mode: 'merge', updatedBy: 'test', now: new Date() });

    const projects = [quota, rated, open, budget];
    // One pipeline (one batch lane per statement) and 160 calls in flight: the batches carry calls of all four projects.
    const decisions = await Promise.all(Array.from({ length: 160 }, (_, i) => governedCall(projects[i % 4]).then((d) => ({ projectId: projects[i % 4], d }))));
    const allowed = (p: string) => decisions.filter((x) => x.projectId === p && x.d === 'allow').length;
    expect(allowed(quota)).toBe(10);
    expect(allowed(rated)).toBe(15);
    expect(decisions.filter((x) => x.projectId === rated && x.d === 'throttle')).toHaveLength(25);
    expect(allowed(open)).toBe(40);
    expect(allowed(budget)).toBe(11);
    const { rows: costs } = await db.query<{ reserved: string; actual: string }>(
      "SELECT DISTINCT reserved_cost_micros AS reserved, actual_cost_micros AS actual FROM permits WHERE project_id = $1 AND decision = 'allow'",
      [budget],
    );
    expect(costs).toEqual([{ reserved: first[0].reserved, actual: first[0].reserved }]);

    for (const projectId of projects) {
      const { rows: permits } = await db.query<{ n: string; settled: string; active: string }>(
        `SELECT count(*) AS n, coalesce(sum(actual_cost_micros), 0) AS settled, count(*) FILTER (WHERE reservation_state <> 'settled') AS active
           FROM permits WHERE project_id = $1 AND decision = 'allow'`,
        [projectId],
      );
      expect(Number(permits[0].active)).toBe(0);
      const { rows: counters } = await db.query<{ period_kind: string; reserved_micros: string; settled_micros: string; requests: string }>(
        'SELECT period_kind, reserved_micros, settled_micros, requests FROM spend_counters WHERE project_id = $1 ORDER BY period_kind',
        [projectId],
      );
      expect(counters.map((r) => r.period_kind)).toEqual(['day', 'month', 'quarter', 'week']);
      for (const r of counters) {
        expect({ project: projectId, period: r.period_kind, reserved: Number(r.reserved_micros), settled: Number(r.settled_micros), requests: Number(r.requests) })
          .toEqual({ project: projectId, period: r.period_kind, reserved: 0, settled: Number(permits[0].settled), requests: Number(permits[0].n) });
      }
    }
    const { rows: windows } = await db.query<{ used: string }>('SELECT coalesce(sum(amount), 0) AS used FROM rate_limit_events WHERE project_id = $1', [rated]);
    expect(Number(windows[0].used)).toBe(15);
  });
});
