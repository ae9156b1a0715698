/**
 * Worker-thread entry of run-thread.ts (its CPU priority already lowered there): runs each project's
 * retention step on connections of its own (each step waiting for the caller's callback), then
 * reports the result or the failure with its class's name.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { createPool } from '../db/pool';
import { retainProjects } from './run';
import type { RetentionStep, RetentionThreadData, StepReply, ThreadMessage } from './run-thread';

const { config, opts } = workerData as RetentionThreadData;
const port = parentPort!;
const say = (m: ThreadMessage) => port.postMessage(m);

const waiting = new Map<number, { resolve: () => void; reject: (err: Error) => void }>();
let nextStep = 1;
port.on('message', (reply: StepReply) => {
  const w = waiting.get(reply.stepId);
  if (!w) return;
  waiting.delete(reply.stepId);
  if (!reply.error) return w.resolve();
  const err = new Error(reply.error.message);
  err.name = reply.error.name;
  w.reject(err);
});
const onStep = (step: RetentionStep, archiveId: string) =>
  new Promise<void>((resolve, reject) => {
    const stepId = nextStep++;
    waiting.set(stepId, { resolve, reject });
    say({ stepId, step, archiveId });
  });

void (async () => {
  // A project's advisory lock holds one connection while its archive reads and deletes on others.
  const db = createPool(config.databaseUrl, 4);
  let out: Awaited<ReturnType<typeof retainProjects>> | null = null;
  let failure: Error | null = null;
  try {
    out = await retainProjects({ db, config }, { ...opts, onStep });
  } catch (err) {
    failure = err instanceof Error ? err : new Error(String(err));
  } finally {
    await db.end().catch(() => undefined);
  }
  if (failure) say({ error: failure.message, name: failure.constructor?.name === 'Error' ? failure.name : (failure.constructor?.name ?? failure.name) });
  else say({ done: out! });
})();
