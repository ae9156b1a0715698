/**
 * The proxy surface reads its request and writes its stream through plain interfaces (a header
 * record, a body reader, a StreamSink), so these run without an HTTP server.
 */
import { pipeStream } from '../../../src/proxy/attempts';
import { inferCall } from '../../../src/proxy/infer';
import { ProxyError } from '../../../src/proxy/native-errors';
import { headerOf, parseBody, planRouting, readCallBody, type ProxyRequest } from '../../../src/proxy/request';
import type { StreamSink } from '../../../src/proxy/sink';
import { translatedRequest } from '../../../src/proxy/translate';

const json = (v: unknown) => Buffer.from(JSON.stringify(v));
const chat = (extra: Record<string, unknown> = {}) => ({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], ...extra });

async function refusal(p: Promise<unknown>): Promise<ProxyError> {
  const err = await p.then(() => null, (e: unknown) => e);
  expect(err).toBeInstanceOf(ProxyError);
  return err as ProxyError;
}

describe('proxy request from plain inputs', () => {
  it('reads headers from a record: absent is empty, repeated values are joined', () => {
    expect(headerOf({ 'x-a': 'v' }, 'x-a')).toBe('v');
    expect(headerOf({}, 'x-a')).toBe('');
    expect(headerOf({ 'x-a': ['1', '2'] }, 'x-a')).toBe('1, 2');
  });

  it('refuses a body past the limit with a native 413', async () => {
    const request = { readBody: async () => null } as unknown as ProxyRequest;
    const err = await refusal(readCallBody(request, 10));
    expect([err.status, err.code, err.message]).toEqual([413, 'payload_too_large', 'The request body exceeds 10 bytes']);
  });

  it('parses JSON and refuses other media types, bad JSON and non-objects', async () => {
    expect((await parseBody(json(chat()), 'application/json')).json).toEqual(chat());
    expect((await refusal(parseBody(Buffer.from('x'), 'text/plain'))).status).toBe(415);
    expect((await refusal(parseBody(Buffer.from('{'), 'application/json'))).code).toBe('invalid_json');
    expect((await refusal(parseBody(Buffer.from('[1]'), 'application/json'))).message).toBe('The request body must be a JSON object');
  });

  it('plans routing from the routing headers', async () => {
    const call = inferCall('openai', '/v1/chat/completions', await parseBody(json(chat()), 'application/json'));
    expect(planRouting({}, call)).toMatchObject({ primary: { provider: 'openai', model: 'gpt-4o-mini' }, fallback: [], headers: {} });
    const plan = planRouting({ 'x-svc-target-provider': 'anthropic', 'x-svc-target-model': 'claude-x', 'x-svc-fallback-chain': 'openai:gpt-4o, anthropic:claude-x' }, call);
    expect(plan.primary).toEqual({ provider: 'anthropic', model: 'claude-x' });
    expect(plan.fallback).toEqual([{ provider: 'openai', model: 'gpt-4o' }]);
    expect(plan.headers).toEqual({ provider: 'anthropic', model: 'claude-x', chain: 'openai:gpt-4o, anthropic:claude-x' });
  });
});

describe('pipeStream through a StreamSink', () => {
  function recordingSink() {
    const log: string[] = [];
    const chunks: Buffer[] = [];
    const sink: StreamSink = {
      open: (status, headers) => log.push(`open ${status} ${headers['content-type']} ${headers['cache-control']} ${headers['x-accel-buffering']}`),
      write: (c) => chunks.push(c),
      end: () => log.push('end'),
      destroy: () => log.push('destroy'),
      onClientGone: () => () => undefined,
      started: false,
    };
    return { sink, log, chunks };
  }
  const events = [
    `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', model: 'gpt-4o-mini', choices: [{ index: 0, delta: { content: 'Hel' }, finish_reason: null }] })}\n\n`,
    `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', model: 'gpt-4o-mini', choices: [{ index: 0, delta: { content: 'lo' }, finish_reason: 'stop' }] })}\n\n`,
    `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', model: 'gpt-4o-mini', choices: [], usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 } })}\n\n`,
    'data: [DONE]\n\n',
  ].map((e) => Buffer.from(e));
  const upstream = (chunks: Buffer[], breakAfter?: number) => ({
    statusCode: 200,
    body: Object.assign(
      (async function* () {
        for (const [i, c] of chunks.entries()) {
          if (i === breakAfter) throw new Error('socket closed');
          yield c;
        }
      })(),
      { destroy: () => undefined },
    ),
  });

  async function call() {
    const c = inferCall('openai', '/v1/chat/completions', await parseBody(json(chat({ stream: true, stream_options: { include_usage: true } })), 'application/json'));
    return { c, req: { ...translatedRequest(c, { provider: 'openai', model: c.model }), stream: true } };
  }

  it('writes the provider bytes unchanged and ends the sink only when told', async () => {
    const { sink, log, chunks } = recordingSink();
    const { c, req } = await call();
    const a = await pipeStream({ sink, signal: new AbortController().signal }, c, req, { res: upstream(events), headers: { 'content-type': 'text/event-stream' } });
    expect(Buffer.concat(chunks)).toEqual(Buffer.concat(events));
    expect(log).toEqual(['open 200 text/event-stream no-cache no']);
    expect(a).toMatchObject({ ok: true, streamed: true, usage: { input_tokens: 5, output_tokens: 2 } });
    a.finish!();
    expect(log).toEqual(['open 200 text/event-stream no-cache no', 'end']);
  });

  it('cuts the sink short when the provider stream breaks', async () => {
    const { sink, log } = recordingSink();
    const { c, req } = await call();
    const a = await pipeStream({ sink, signal: new AbortController().signal }, c, req, { res: upstream(events, 2), headers: { 'content-type': 'text/event-stream' } });
    expect(a).toMatchObject({ ok: false, streamed: true, failure: { kind: 'stream_broken' } });
    expect(log).toEqual(['open 200 text/event-stream no-cache no', 'destroy']);
  });
});
