/**
 * One scenario of the fault suite: callers keep sync calls, streams, jobs and intent-joined calls in
 * flight while one fault lands a third of the way into the load and is repaired; a probe measures
 * the time from the fault to the first answered call.
 */
export const SCENARIOS = ['kill-api', 'kill-worker', 'restart-temporal', 'restart-postgres'] as const;
export type Scenario = (typeof SCENARIOS)[number];
export type CallKind = 'sync' | 'stream' | 'job' | 'intent';

/** The intent a fifth of the calls join; its ceiling is below what the load asks of it. */
export const CHAOS_INTENT = 'chaos-intent';

export interface CallResult {
  nonce: string;
  kind: CallKind;
  scenario: Scenario;
  /** HTTP status, or null when the connection was refused or broke. */
  status: number | null;
  /** Why there was no status: the process was down (refused) or the connection broke mid-call. */
  failure?: 'refused' | 'broken';
  jobId?: string;
}

export interface ScenarioReport {
  scenario: Scenario;
  calls: number;
  answered: number;
  /** Connection refused while a process was down (no call was made). */
  refused: number;
  /** Connection broken mid-call: the caller saw no answer, the record must still close. */
  broken: number;
  byStatus: Record<string, number>;
  /** From the fault to the first sync call answered 200 (probing from the moment of the fault). */
  recoveryMs: number | null;
}


/** How a scenario breaks the system, and how it repairs it (started while the probe already calls). */
export interface Fault {
  inject: () => Promise<void>;
  repair: () => Promise<void>;
}

/** The load a scenario runs under. */
export interface Load {
  url: string;
  /** API key of the chaos project. */
  key: string;
  /** Concurrent callers. */
  concurrency: number;
  /** How long the callers call; the fault lands after a third of it. */
  loadMs: number;
  log: (msg: string) => void;
}

async function call(url: string, key: string, kind: CallKind, nonce: string): Promise<{ status: number | null; failure?: 'refused' | 'broken'; jobId?: string }> {
  const text = `[[emulator:latency_ms=400]] chaos ${nonce}`;
  const body =
    kind === 'job'
      ? { operation: 'generate.text', messages: [{ role: 'user', content: text }] }
      : { operation: 'generate.text', messages: [{ role: 'user', content: text }], ...(kind === 'stream' ? { mode: 'stream' } : {}) };
  try {
    const res = await fetch(`${url}${kind === 'job' ? '/v1/jobs' : '/v1/executions'}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...(kind === 'intent' ? { 'x-svc-workflow-id': CHAOS_INTENT } : {}) },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await res.text(); // a stream is read to its end; a broken one throws here
    // A stream answered only if it ended with its completion (or an error event): a cut stream is no answer.
    if (kind === 'stream' && res.status === 200 && !/^event: (completion|error)$/m.test(text)) return { status: null, failure: 'broken' };
    const jobId = kind === 'job' && res.status === 202 ? (JSON.parse(text) as { id: string }).id : undefined;
    return { status: res.status, ...(jobId ? { jobId } : {}) };
  } catch (err) {
    const code = (err as { cause?: { code?: string } }).cause?.code;
    return { status: null, failure: code === 'ECONNREFUSED' ? 'refused' : 'broken' };
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs one scenario; `seq` numbers the calls across scenarios (a call's number picks its kind). */
export async function runScenario(scenario: Scenario, fault: Fault, load: Load, seq: { next: number }): Promise<{ report: ScenarioReport; results: CallResult[] }> {
  const startedAt = Date.now();
  let stopAt = startedAt + load.loadMs;
  let faultAt = 0;
  let recoveredAt: number | null = null;
  const results: CallResult[] = [];
  const caller = async (i: number) => {
    while (Date.now() < stopAt) {
      const n = seq.next++;
      const kind: CallKind = n % 5 === 2 ? 'intent' : n % 5 === 3 ? 'stream' : n % 5 === 4 ? 'job' : 'sync';
      const nonce = `${scenario}-${n}-${i}`;
      const r = await call(load.url, load.key, kind, nonce);
      results.push({ nonce, kind, scenario, ...r });
      if (r.status === null) await sleep(100);
    }
  };
  // Break, then (while the probe already calls) repair; recovery = fault to the first 200.
  const faulted = (async () => {
    await sleep(load.loadMs / 3);
    faultAt = Date.now();
    load.log(`[chaos] ${scenario}`);
    await fault.inject();
    const repaired = fault.repair();
    for (let probe = 0; recoveredAt === null && Date.now() - faultAt < 120_000; probe++) {
      if ((await call(load.url, load.key, 'sync', `${scenario}-probe-${probe}`)).status === 200) recoveredAt = Date.now();
      else await sleep(100);
    }
    await repaired;
    stopAt = Math.max(stopAt, Date.now() + 1000);
  })();
  await Promise.all([faulted, ...Array.from({ length: load.concurrency }, (_, i) => caller(i))]);
  const byStatus: Record<string, number> = {};
  for (const r of results) byStatus[String(r.status ?? r.failure)] = (byStatus[String(r.status ?? r.failure)] ?? 0) + 1;
  const report: ScenarioReport = {
    scenario,
    calls: results.length,
    answered: results.filter((r) => r.status !== null).length,
    refused: results.filter((r) => r.failure === 'refused').length,
    broken: results.filter((r) => r.failure === 'broken').length,
    byStatus,
    recoveryMs: recoveredAt === null ? null : recoveredAt - faultAt,
  };
  load.log(`[chaos] ${scenario}: ${JSON.stringify(report)}`);
  return { report, results };
}
