import { startHarness, Harness, say, eventTypes, parseSse, emulatorEnv, patchPolicy } from './helpers';
import { startTestTollgate, TestProject } from '../../support/tollgate';
import { waitUntil as waitFor } from '../../support/wait';
import { findCallRecordById } from '../../../src/db/repositories/call-records';

describe('streaming executions (mode: stream, SSE)', () => {
  let h: Harness;
  let p: TestProject;
  beforeAll(async () => {
    h = await startHarness();
    p = await h.project();
  });
  afterAll(async () => h?.close());

  const stream = (baseUrl: string, key: string, body: Record<string, unknown>, signal?: AbortSignal) =>
    fetch(`${baseUrl}/v1/executions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ operation: 'generate.text', mode: 'stream', ...body }),
      signal,
    });

  async function checkHappyStream(baseUrl: string, provider: string) {
    const res = await stream(baseUrl, p.clientKey, { messages: say('stream me a story'), routing: { provider } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(res.headers.get('x-svc-permit-id')).toMatch(/^permit_/);
    const records = parseSse(await res.text());
    expect(records[0].event).toBe('start');
    expect(records[0].data).toMatchObject({ object: 'execution', status: 'in_progress', routing: { selected_provider: provider } });
    const deltas = records.filter((r) => r.event === 'delta');
    expect(deltas.length).toBeGreaterThan(1);
    for (const d of deltas) expect(d.data).toEqual({ delta: { type: 'output_text_delta', text: expect.any(String) } });
    const last = records.at(-1)!;
    expect(last.event).toBe('completion');
    expect(last.data).toMatchObject({ object: 'execution', status: 'completed', status_code: 200, error: null });
    expect(deltas.map((d) => d.data.delta.text).join('')).toBe(last.data.output.content[0].text);
    expect(last.data.usage.output_tokens).toBeGreaterThan(0);
    const types = await eventTypes(h.tg, p.project.id, last.data.id);
    expect(types.filter((t) => t === 'usage.recorded')).toHaveLength(1);
    const back = await h.call('GET', `/v1/executions/${last.data.id}`, { key: p.clientKey });
    expect(back.json).toEqual(last.data);
    return last.data;
  }

  it('openai happy path: start, deltas, completion (deltas written as they arrive)', async () => {
    const env = await checkHappyStream(h.tg.url!, 'openai');
    expect(env.usage.estimated_final).toBe(false);
  });

  it.each(['anthropic', 'google', 'deepseek', 'mistral'])('%s streams too', async (provider) => {
    await checkHappyStream(h.tg.url!, provider);
  });

  it('an API-only process (no Temporal worker anywhere on its queue) streams in process', async () => {
    const env = { ...emulatorEnv(h.emu.url), TEMPORAL_TASK_QUEUE: `stream-api-only-${Date.now()}` };
    const api = await startTestTollgate({ env, role: 'api' });
    try {
      const res = await stream(api.url!, p.clientKey, { messages: say('[[emulator:chunk_delay_ms=20]] no worker needed') });
      expect(res.status).toBe(200);
      const records = parseSse(await res.text());
      const deltas = records.filter((r) => r.event === 'delta');
      expect(deltas.length).toBeGreaterThan(3);
      const last = records.at(-1)!;
      expect(last.event).toBe('completion');
      expect(deltas.map((d) => d.data.delta.text).join('')).toBe(last.data.output.content[0].text);
    } finally {
      await api.close();
    }
  });

  it('upstream break mid-stream: error record, estimated usage recorded once', async () => {
    const res = await stream(h.tg.url!, p.clientKey, { messages: say('[[emulator:stream_break_after=4]] break please') });
    expect(res.status).toBe(200);
    const records = parseSse(await res.text());
    expect(records[0].event).toBe('start');
    expect(records.filter((r) => r.event === 'delta').length).toBeGreaterThan(0);
    const last = records.at(-1)!;
    expect(last.event).toBe('error');
    expect(last.data.error).toEqual({ code: 'upstream_error', message: expect.any(String) });
    const env = last.data.execution;
    expect(env).toMatchObject({ status: 'failed', status_code: 502, output: null });
    expect(env.usage.estimated_final).toBe(true);
    expect(env.usage.input_tokens).toBeGreaterThan(0);
    const types = await eventTypes(h.tg, p.project.id, env.id);
    expect(types.filter((t) => t === 'usage.recorded')).toHaveLength(1);
    expect(types.at(-1)).toBe('request.errored');
  });

  it('upstream failure before any output: JSON 502 envelope (no SSE)', async () => {
    const res = await stream(h.tg.url!, p.clientKey, { messages: say('[[emulator:status=500]] x') });
    expect(res.status).toBe(502);
    const env = await res.json();
    expect(env).toMatchObject({ status: 'failed', error: { code: 'upstream_error' } });
  });

  it('a denied stream is answered like sync: 403 JSON envelope', async () => {
    const q = await h.project();
    await patchPolicy(h, q, { allowed_models: ['anthropic/*'] });
    const res = await stream(h.tg.url!, q.clientKey, { messages: say('x'), routing: { provider: 'openai' } });
    expect(res.status).toBe(403);
    expect(((await res.json()) as any).status).toBe('denied');
  });

  it('client disconnect mid-stream: upstream aborted, estimated usage still recorded once', async () => {
    const ac = new AbortController();
    const upstreamBefore = h.emu.inProgress();
    // 2 s between chunks: the story takes the provider half a minute unless Tollgate hangs up on it.
    const res = await stream(h.tg.url!, p.clientKey, { messages: say('[[emulator:chunk_delay_ms=2000]] a long story'), parameters: { max_output_tokens: 200 } }, ac.signal);
    expect(res.status).toBe(200);
    const permitId = res.headers.get('x-svc-permit-id')!;
    const reader = res.body!.getReader();
    let text = '';
    while (!text.includes('event: delta')) {
      const { value } = await reader.read();
      text += new TextDecoder().decode(value);
    }
    const start = parseSse(text.split('\n\n')[0] + '\n\n')[0];
    ac.abort();
    const row = await waitFor(async () => findCallRecordById(h.tg.db, start.data.id));
    expect(row).toMatchObject({ status: 'failed', status_code: 499, error_code: 'client_disconnected', estimated_final: true, permit_id: permitId });
    expect(row.input_tokens).toBeGreaterThan(0);
    expect(row.envelope.usage.estimated_final).toBe(true);
    const types = await eventTypes(h.tg, p.project.id, start.data.id);
    expect(types.filter((t) => t === 'usage.recorded')).toHaveLength(1);
    // The upstream call was aborted: the emulator stopped serving the story it was in the middle of.
    await waitFor(async () => h.emu.inProgress() === upstreamBefore);
  });
});
