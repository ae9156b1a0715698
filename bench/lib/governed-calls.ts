/**
 * The governed-call pipeline's database work without HTTP or a provider, for `bench:footprint
 * --pipeline` and `bench:log --sequencer`: `govern` and `record` of activities/governed-call.ts on
 * one project, with a provider that answers at once.
 */
import { createGovernedCallActivities } from '../../activities/governed-call';
import { systemClock } from '../../src/clock';
import type { Db } from '../../src/db/pool';
import type { ExecutionInput } from '../../src/executions/types';
import { createGovernance } from '../../src/governance';
import { newId } from '../../src/ids';
import { createLogger } from '../../src/logger';
import { pricing } from '../../src/pricing';
import type { NormalizedRequest, ProviderGateway } from '../../src/providers/types';

const PROMPT = 'Summarise the benefits of unit tests in two sentences.';

/** A provider that answers at once with the given usage. */
export function instantProvider(usage: { input_tokens: number; output_tokens: number } = { input_tokens: 12, output_tokens: 6 }): ProviderGateway {
  return {
    dispatch: async () => ({
      output: { content: [{ type: 'text', role: 'assistant', text: 'Unit tests catch regressions early.' }] },
      output_assets: [],
      usage: { ...usage, total_tokens: usage.input_tokens + usage.output_tokens, metrics: [], estimated: false },
      finish_reason: 'stop',
    }),
  };
}

/** A new sync execution of the bench's prompt on a project, and its primary target's normalized request. */
export function callInput(projectId: string): { input: ExecutionInput; request: NormalizedRequest; prompt: string } {
  const input: ExecutionInput = {
    executionId: newId('exec_req'), permitId: newId('permit'), projectId, route: 'executions', mode: 'sync', createdAt: new Date().toISOString(),
    request: { operation: 'generate.text', messages: [{ role: 'user', content: PROMPT }] },
    routing: { requested_provider: 'openai', requested_model: 'gpt-4o-mini', reason_code: 'explicit_request', primary: { provider: 'openai', model: 'gpt-4o-mini' }, fallback: [] },
    workflowIntentId: null, idempotencyKey: null, keyId: null, dispatchTimeoutMs: 60_000, heartbeatTimeoutMs: 0,
  };
  return { input, request: { operation: 'generate.text', provider: 'openai', model: 'gpt-4o-mini', stream: false, messages: input.request.messages }, prompt: PROMPT };
}

/** The call's governance decision, and the milliseconds each step took (record: 0 unless allowed). */
export interface CallTimes {
  decision: 'allow' | 'deny' | 'throttle' | 'review';
  govern: number;
  record: number;
}

/**
 * Returns a function that runs one governed call (govern, dispatch, record) on a project. One
 * pipeline for every project, as in the API process (its batches carry calls of several projects).
 */
export function governedCalls(db: Db, provider: ProviderGateway = instantProvider()): (projectId: string) => Promise<CallTimes> {
  // The record commits as the API process's does (RECORD_COMMIT, default async).
  const recordCommit = process.env.RECORD_COMMIT === 'sync' ? 'sync' : 'async';
  const calls = createGovernedCallActivities({ db, clock: systemClock, logger: createLogger('warn'), governance: createGovernance({ db, clock: systemClock }), pricing, providers: provider, recordCommit });
  return async (projectId) => {
    const { input, request: req } = callInput(projectId);
    const t0 = performance.now();
    const gov = await calls.govern({ input, request: req, route: 'executions', inspectableText: [PROMPT], permitMetadata: {}, inProcess: {} });
    const t1 = performance.now();
    if (gov.decision !== 'allow') return { decision: gov.decision, govern: t1 - t0, record: 0 };
    const { outcome } = await calls.dispatch(input);
    const t2 = performance.now();
    await calls.record(input, { kind: 'dispatched', gov, outcome });
    return { decision: gov.decision, govern: t1 - t0, record: performance.now() - t2 };
  };
}
