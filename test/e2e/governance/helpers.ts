import { appendEvents } from '../../../src/db/repositories/events';
import { chainAllProjectEvents } from '../../../src/db/repositories/event-chain';
import type { NewEvent } from '../../../src/events/types';
import type { Db } from '../../../src/db/pool';
import { say, type Harness } from '../executions/helpers';

/** Writes `n` events for the project the way the pipeline does (tollgate_insert_batch_events), then chains them. */
export async function writeEvents(db: Db, projectId: string, n: number, base: Partial<NewEvent> = {}): Promise<void> {
  const events: NewEvent[] = Array.from({ length: n }, (_, i) => ({
    projectId,
    eventType: base.eventType ?? (i % 2 === 0 ? 'permit.allowed' : 'execution.completed'),
    source: 'test',
    phase: 'permit',
    requestId: base.requestId ?? `exec_req_test_${i}`,
    permitId: base.permitId ?? null,
    metadata: { i, ...(base.metadata ?? {}) },
    timestamp: base.timestamp,
  }));
  await appendEvents(db, events);
  await chainAllProjectEvents(db, projectId);
}

export interface SseMessage {
  id: string | null;
  event: string | null;
  data: string;
}

/** A minimal SSE client over fetch: collects messages and comment lines until closed. */
export function openSse(url: string, headers: Record<string, string>) {
  const abort = new AbortController();
  const messages: SseMessage[] = [];
  const comments: string[] = [];
  let status = 0;
  const done = (async () => {
    const res = await fetch(url, { headers: { accept: 'text/event-stream', ...headers }, signal: abort.signal });
    status = res.status;
    if (!res.body) return;
    const reader = res.body.getReader();
    const dec = new TextDecoder();
    let buf = '';
    try {
      for (;;) {
        const { value, done: end } = await reader.read();
        if (end) break;
        buf += dec.decode(value, { stream: true });
        let i: number;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          const msg: SseMessage = { id: null, event: null, data: '' };
          let hasData = false;
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) comments.push(line.slice(1).trim());
            else if (line.startsWith('id: ')) msg.id = line.slice(4);
            else if (line.startsWith('event: ')) msg.event = line.slice(7);
            else if (line.startsWith('data: ')) {
              msg.data += line.slice(6);
              hasData = true;
            }
          }
          if (hasData) messages.push(msg);
        }
      }
    } catch (err) {
      if (!abort.signal.aborted) throw err;
    }
  })().catch((err: unknown) => {
    if (!abort.signal.aborted) throw err;
  });
  return { messages, comments, status: () => status, close: () => abort.abort(), done };
}

/**
 * Builds the Go interoperability verifier (test/interop/go-verifier) and returns a runner, or null
 * when `go` is not on PATH (the caller then skips with a message).
 */
export function goVerifier(): ((input: unknown) => { status: number | null; out: any }) | null {
  /* eslint-disable @typescript-eslint/no-require-imports */
  const { execFileSync, spawnSync } = require('node:child_process') as typeof import('node:child_process');
  const { mkdtempSync, writeFileSync } = require('node:fs') as typeof import('node:fs');
  const { tmpdir } = require('node:os') as typeof import('node:os');
  const { join, resolve } = require('node:path') as typeof import('node:path');
  /* eslint-enable @typescript-eslint/no-require-imports */
  if (spawnSync('go', ['version']).status !== 0) return null;
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-go-'));
  const bin = join(dir, 'goverifier');
  execFileSync('go', ['build', '-o', bin, '.'], { cwd: resolve(__dirname, '../../interop/go-verifier'), stdio: 'pipe', timeout: 240_000 });
  let n = 0;
  return (input) => {
    const f = join(dir, `input-${n++}.json`);
    writeFileSync(f, JSON.stringify(input));
    const r = spawnSync(bin, [f], { encoding: 'utf8' });
    return { status: r.status, out: JSON.parse(r.stdout.trim()) };
  };
}

/** `n` governed calls of the key, one after another, each answered 200. */
export async function makeCalls(h: Harness, key: string, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const res = await h.call('POST', '/v1/executions', { key, body: { operation: 'generate.text', messages: say(`call ${i}`), routing: { provider: 'openai', model: 'gpt-4o-mini' } } });
    expect(res.status).toBe(200);
  }
}
