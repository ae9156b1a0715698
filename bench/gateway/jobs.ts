/**
 * Async jobs and webhooks benchmark (not a test): `npm run bench:gateway -- --jobs`.
 *
 * Starts its own Temporal dev server, a throwaway PostgreSQL database, the provider emulator, a
 * webhook receiver (every delivery verified with the `standardwebhooks` package) and one
 * in-process Tollgate (API + worker + webhook fan-out). Subscribes to job.completed, submits
 * BENCH_JOBS (default 1,000) jobs at once (BENCH_SUBMITTERS concurrent HTTP submitters), and
 * reports: submissions/s, jobs/s from the first submission to the last completion, the processing
 * limit observed (max jobs of the project in processing at once, from started_at/completed_at),
 * webhook delivery latency (receipt at the receiver − the job's completed_at: p50/p95/p99/max),
 * and the count at the receiver: distinct webhook-ids (must equal the job count), duplicates and
 * signature failures (must be 0).
 *
 * Knobs: BENCH_JOBS, BENCH_SUBMITTERS (50), BENCH_PROVIDER_LATENCY_MS (200, the emulator's delay
 * per call), JOBS_MAX_PROCESSING_PER_PROJECT (Tollgate's, default 16 here too).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { createProject } from '../../src/db/repositories/projects';
import { createApiKey } from '../../src/db/repositories/api-keys';
import { startInProcessTollgate } from '../lib/in-process';
import { pct } from '../lib/load';
import { startEmulator } from '../../emulator/server';

const JOBS = Number(process.env.BENCH_JOBS ?? 1000);
const SUBMITTERS = Number(process.env.BENCH_SUBMITTERS ?? 50);
const LATENCY_MS = Number(process.env.BENCH_PROVIDER_LATENCY_MS ?? 200);

export async function run(): Promise<void> {
  const log = (m: string) => process.stdout.write(`${m}\n`);
  const emu = await startEmulator({ port: 0 });

  // The receiver: verifies each delivery, records its webhook-id and receipt time.
  let secret = '';
  const received: { id: string; at: number; jobId: string; completedAt: string }[] = [];
  let badSignatures = 0;
  const receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = Date.now();
      const body = Buffer.concat(chunks).toString('utf8');
      try {
        const payload = new Webhook(secret).verify(body, {
          'webhook-id': String(req.headers['webhook-id']),
          'webhook-timestamp': String(req.headers['webhook-timestamp']),
          'webhook-signature': String(req.headers['webhook-signature']),
        }) as { data: { id: string; completed_at: string } };
        received.push({ id: String(req.headers['webhook-id']), at, jobId: payload.data.id, completedAt: payload.data.completed_at });
      } catch {
        badSignatures++;
      }
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
  const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;

  const env: NodeJS.ProcessEnv = {
    WEBHOOK_ALLOWED_HOSTS: '127.0.0.1',
    WEBHOOK_FANOUT: 'on',
    JOBS_MAX_PROCESSING_PER_PROJECT: process.env.JOBS_MAX_PROCESSING_PER_PROJECT ?? '16',
  };
  for (const [p, prefix] of [['openai', 'OPENAI'], ['anthropic', 'ANTHROPIC'], ['google', 'GEMINI'], ['deepseek', 'DEEPSEEK'], ['mistral', 'MISTRAL']]) {
    env[`${prefix}_BASE_URL`] = `${emu.url}/${p}`;
    env[`${prefix}_API_KEY`] = 'bench';
  }
  const { tg, config, close } = await startInProcessTollgate({ name: 'jobs', env, log });
  let failed = false;
  try {
    const project = await createProject(tg.db, { name: 'bench-jobs', plan: 'production' });
    const { key } = await createApiKey(tg.db, { projectId: project.id, scope: 'client' });
    const { key: admin } = await createApiKey(tg.db, { projectId: project.id, scope: 'admin' });
    const sub = await fetch(`${tg.url}/v1/webhooks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: receiverUrl, event_types: ['job.completed', 'job.failed'] }),
    }).then((r) => r.json() as Promise<{ secret: string }>);
    secret = sub.secret;

    log(`submitting ${JOBS} jobs (${SUBMITTERS} concurrent submitters, provider latency ${LATENCY_MS} ms, processing limit ${config.jobs.maxProcessingPerProject} per project)…`);
    const ids: string[] = [];
    let next = 0;
    const t0 = Date.now();
    await Promise.all(
      Array.from({ length: SUBMITTERS }, async () => {
        while (next < JOBS) {
          const i = next++;
          const res = await fetch(`${tg.url}/v1/jobs`, {
            method: 'POST',
            headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
            body: JSON.stringify({ operation: 'generate.text', messages: [{ role: 'user', content: `[[emulator:latency_ms=${LATENCY_MS}]] bench job ${i}` }] }),
          });
          if (res.status !== 202) throw new Error(`submit ${i}: ${res.status} ${await res.text()}`);
          ids.push(((await res.json()) as { id: string }).id);
        }
      }),
    );
    const submitted = Date.now();
    log(`submitted ${ids.length} in ${((submitted - t0) / 1000).toFixed(1)} s → ${(ids.length / ((submitted - t0) / 1000)).toFixed(0)} submissions/s`);

    let done: { status: string; started_at: Date; completed_at: Date }[] = [];
    for (;;) {
      const { rows } = await tg.db.query<{ status: string; started_at: Date; completed_at: Date }>(
        "SELECT status, started_at, completed_at FROM jobs WHERE project_id = $1 AND status IN ('completed', 'failed', 'cancelled')",
        [project.id],
      );
      done = rows;
      if (rows.length >= JOBS) break;
      if (Date.now() - t0 > 30 * 60_000) throw new Error(`only ${rows.length} of ${JOBS} jobs finished in 30 minutes`);
      await new Promise((r) => setTimeout(r, 250));
    }
    const lastCompletion = Math.max(...done.map((j) => new Date(j.completed_at).getTime()));
    const completedCount = done.filter((j) => j.status === 'completed').length;
    const seconds = (lastCompletion - t0) / 1000;
    const marks = done.flatMap((j) => [{ t: new Date(j.started_at).getTime(), d: 1 }, { t: new Date(j.completed_at).getTime(), d: -1 }]).sort((a, b) => a.t - b.t || a.d - b.d);
    let cur = 0;
    let maxProcessing = 0;
    for (const m of marks) maxProcessing = Math.max(maxProcessing, (cur += m.d));
    log(`jobs: ${completedCount}/${JOBS} completed in ${seconds.toFixed(1)} s (first submission → last completion) → ${(JOBS / seconds).toFixed(1)} jobs/s; max in processing at once ${maxProcessing} (limit ${config.jobs.maxProcessingPerProject})`);

    const deadline = Date.now() + 5 * 60_000;
    while (new Set(received.map((r) => r.id)).size < JOBS && Date.now() < deadline) await new Promise((r) => setTimeout(r, 250));
    await new Promise((r) => setTimeout(r, 2000)); // late duplicates, if any
    const distinct = new Set(received.map((r) => r.id)).size;
    const distinctJobs = new Set(received.map((r) => r.jobId)).size;
    const latencies = received.map((r) => r.at - new Date(r.completedAt).getTime()).sort((a, b) => a - b);
    log(`webhooks: ${received.length} deliveries received, ${distinct} distinct webhook-ids for ${distinctJobs} jobs, ${received.length - distinct} duplicates, ${badSignatures} bad signatures`);
    if (latencies.length > 0) {
      log(`delivery latency (receipt − job completed_at): p50 ${pct(latencies, 50)} ms, p95 ${pct(latencies, 95)} ms, p99 ${pct(latencies, 99)} ms, max ${latencies[latencies.length - 1]} ms`);
    }
    if (completedCount !== JOBS || distinct !== JOBS || badSignatures > 0 || maxProcessing > config.jobs.maxProcessingPerProject) failed = true;
    log(failed ? 'RESULT: FAILED' : 'RESULT: every job completed, each webhook event delivered with one webhook-id');
  } finally {
    await close();
    await emu.close();
    receiver.closeAllConnections();
    receiver.close();
  }
  process.exit(failed ? 1 : 0);
}
