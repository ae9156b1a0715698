import { FormData } from 'undici';
import { providerModules } from '../../../src/providers';
import { countChatTokens, countTokens } from '../../../src/pricing/tokenizer';
import { failure, noCtx, startHarness, textReq, type Harness } from './helpers';

const openai = providerModules.openai;
let h: Harness;
beforeAll(async () => { h = await startHarness(); });
afterAll(async () => { await h.close(); });

describe('openai request transform', () => {
  it('builds a chat body with portable parameters over provider_options', async () => {
    const call = await openai.buildRequest(
      textReq('openai', 'gpt-4o-mini', 'hi', {
        messages: [{ role: 'system', content: 'be brief' }, { role: 'user', content: 'hi' }],
        parameters: { max_output_tokens: 50, temperature: 0.2, top_p: 0.9 },
        providerOptions: { temperature: 1.5, seed: 7, model: 'other' },
        stream: true,
      }),
      noCtx,
    );
    expect(call.path).toBe('/v1/chat/completions');
    expect(call.responseKind).toBe('sse');
    expect(call.body).toEqual({
      model: 'gpt-4o-mini',
      messages: [{ role: 'system', content: 'be brief' }, { role: 'user', content: 'hi' }],
      max_completion_tokens: 50,
      temperature: 0.2,
      top_p: 0.9,
      seed: 7,
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(openai.authHeaders('sk-1')).toEqual({ authorization: 'Bearer sk-1' });
  });

  it('builds image_url parts for understand.image and the right paths for media operations', async () => {
    const vision = await openai.buildRequest(
      { operation: 'understand.image', provider: 'openai', model: 'gpt-4o-mini', stream: false, inputs: [
        { type: 'text', text: 'what is this?' }, { type: 'image', asset: { source: 'url', url: 'https://x/cat.png', mime_type: 'image/png' } }] },
      noCtx,
    );
    expect((vision.body as any).messages[0].content).toEqual([
      { type: 'text', text: 'what is this?' },
      { type: 'image_url', image_url: { url: 'https://x/cat.png' } },
    ]);
    const emb = await openai.buildRequest({ operation: 'embed.text', provider: 'openai', model: 'text-embedding-3-small', stream: false, messages: [{ role: 'user', content: 'a' }] }, noCtx);
    expect(emb).toMatchObject({ path: '/v1/embeddings', body: { model: 'text-embedding-3-small', input: ['a'] } });
    const img = await openai.buildRequest({ operation: 'generate.image', provider: 'openai', model: 'gpt-image-1', stream: false, messages: [{ role: 'user', content: 'a cat' }] }, noCtx);
    expect(img).toMatchObject({ path: '/v1/images/generations', body: { model: 'gpt-image-1', prompt: 'a cat', n: 1 } });
    const tts = await openai.buildRequest({ operation: 'generate.audio', provider: 'openai', model: 'tts-1', stream: false, messages: [{ role: 'user', content: 'say hi' }] }, noCtx);
    expect(tts).toMatchObject({ path: '/v1/audio/speech', responseKind: 'binary', body: { model: 'tts-1', input: 'say hi', voice: 'alloy', response_format: 'mp3' } });
  });

  it('uploads the fetched audio asset as a multipart file for transcriptions', async () => {
    const call = await openai.buildRequest(
      { operation: 'transcribe.audio', provider: 'openai', model: 'whisper-1', stream: false, inputs: [{ type: 'audio', asset: { source: 'url', url: 'https://x/a.mp3', mime_type: 'audio/mpeg' } }] },
      { fetchAsset: async () => ({ data: Buffer.from('hello'), mimeType: 'audio/mpeg', filename: 'a.mp3' }) },
    );
    expect(call.bodyKind).toBe('multipart');
    const form = call.body as FormData;
    expect(form.get('model')).toBe('whisper-1');
    expect(form.get('response_format')).toBe('json');
    expect((form.get('file') as File).name).toBe('a.mp3');
  });

  it('lists inspectable text of a native request', () => {
    expect(openai.inspectableText({ messages: [{ role: 'user', content: [{ type: 'text', text: 'x' }, { type: 'image_url', image_url: { url: 'u' } }] }, { role: 'system', content: 'y' }] })).toEqual(['x', 'y']);
    expect(openai.inspectableText({ input: ['e1', 'e2'] })).toEqual(['e1', 'e2']);
  });
});

describe('openai response and usage', () => {
  it('parses a chat completion with cached and reasoning tokens into metrics', () => {
    const r = openai.parseResponse(textReq('openai', 'gpt-4o', 'x'), { method: 'POST', path: '/v1/chat/completions', headers: {}, body: {}, bodyKind: 'json', responseKind: 'json' }, {
      id: 'c', object: 'chat.completion', model: 'gpt-4o-2024-08-06', choices: [{ index: 0, message: { role: 'assistant', content: 'hey' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 100, completion_tokens: 20, total_tokens: 120, prompt_tokens_details: { cached_tokens: 64 }, completion_tokens_details: { reasoning_tokens: 5 } },
    }, 'application/json');
    expect(r.output.content).toEqual([{ type: 'text', role: 'assistant', text: 'hey' }]);
    expect(r.usage).toMatchObject({ input_tokens: 100, output_tokens: 20, total_tokens: 120, cached_input_tokens: 64, reasoning_tokens: 5, estimated: false });
    expect(r.usage.metrics).toEqual([
      { meter: 'input_tokens', quantity: 100, unit: 'tokens' },
      { meter: 'output_tokens', quantity: 20, unit: 'tokens' },
      { meter: 'cached_input_tokens', quantity: 64, unit: 'tokens' },
      { meter: 'reasoning_tokens', quantity: 5, unit: 'tokens' },
    ]);
    expect(r.provider_model).toBe('gpt-4o-2024-08-06');
  });

  it('extracts usage from provider-native bodies and streams', () => {
    expect(openai.extractUsageFromNative('/v1/chat/completions', { usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 } })).toMatchObject({ input_tokens: 3, output_tokens: 4, total_tokens: 7 });
    expect(openai.extractUsageFromNative('/v1/embeddings', { usage: { prompt_tokens: 3, total_tokens: 3 } })).toMatchObject({ input_tokens: 3, output_tokens: 0 });
    expect(openai.extractUsageFromNative('/v1/chat/completions', { choices: [] })).toBeNull();
    expect(openai.extractStreamUsage([{ data: '{"choices":[]}' }, { data: '{"choices":[],"usage":{"prompt_tokens":2,"completion_tokens":1,"total_tokens":3}}' }, { data: '[DONE]' }]))
      .toMatchObject({ input_tokens: 2, output_tokens: 1 });
  });
});

describe('openai through the gateway and the emulator', () => {
  it('chat sync: content and exact usage', async () => {
    const r = await h.gateway.dispatch(textReq('openai', 'gpt-4o-mini', 'hello there'));
    expect(r.output.content[0].text).toContain('you said "hello there"');
    expect(r.usage.input_tokens).toBe(countChatTokens(['hello there']));
    expect(r.usage.output_tokens).toBe(countTokens(r.output.content[0].text));
    expect(r.usage.estimated).toBe(false);
  });

  it('chat stream: deltas and final usage from the include_usage chunk', async () => {
    const deltas: string[] = [];
    const r = await h.gateway.dispatch(textReq('openai', 'gpt-4o-mini', 'stream please [[emulator:cached_tokens=2]]', { stream: true }), { onDelta: (d) => deltas.push(d) });
    expect(deltas.length).toBeGreaterThan(3);
    expect(deltas.join('')).toBe(r.output.content[0].text);
    expect(r.usage).toMatchObject({ estimated: false, cached_input_tokens: 2, output_tokens: countTokens(r.output.content[0].text) });
    expect(r.finish_reason).toBe('stop');
  });

  it('a stream that ends without usage resolves with estimated usage', async () => {
    const r = await h.gateway.dispatch(textReq('openai', 'gpt-4o-mini', 'no usage [[emulator:omit_usage=1]]', { stream: true }));
    expect(r.usage.estimated).toBe(true);
    expect(r.usage.input_tokens).toBe(countChatTokens(['no usage [[emulator:omit_usage=1]]']));
    expect(r.usage.output_tokens).toBe(countTokens(r.output.content[0].text));
  });

  it('a stream that breaks midway rejects with stream_broken and estimated partial usage', async () => {
    const seen: string[] = [];
    const err = await failure(h.gateway.dispatch(textReq('openai', 'gpt-4o-mini', 'break [[emulator:stream_break_after=4]]', { stream: true }), { onDelta: (d) => seen.push(d) }));
    expect(err.failure).toMatchObject({ kind: 'stream_broken', retryable: true });
    expect(err.partialUsage).toMatchObject({ estimated: true, input_tokens: countChatTokens(['break [[emulator:stream_break_after=4]]']) });
    expect(err.partialUsage!.output_tokens).toBe(countTokens(seen.join('')));
    expect(seen.length).toBe(3);
  });

  it('classifies faults: 500, 429 with Retry-After, 400, malformed, timeout, abort', async () => {
    const e500 = await failure(h.gateway.dispatch(textReq('openai', 'gpt-4o-mini', '[[emulator:status=500]]')));
    expect(e500.failure).toMatchObject({ kind: 'http_error', status: 500, retryable: true });
    expect((e500.failure.native as any).error.type).toBe('server_error');
    const e429 = await failure(h.gateway.dispatch(textReq('openai', 'gpt-4o-mini', '[[emulator:status=429,retry_after=7]]')));
    expect(e429.failure).toMatchObject({ kind: 'rate_limited', status: 429, retryable: true, retry_after_seconds: 7 });
    const e400 = await failure(h.gateway.dispatch(textReq('openai', 'gpt-4o-mini', '[[emulator:status=400]]')));
    expect(e400.failure).toMatchObject({ kind: 'http_error', status: 400, retryable: false });
    const bad = await failure(h.gateway.dispatch(textReq('openai', 'gpt-4o-mini', '[[emulator:malformed=1]]')));
    expect(bad.failure.kind).toBe('malformed_response');
    expect(bad.partialUsage?.estimated).toBe(true);
    const badStream = await failure(h.gateway.dispatch(textReq('openai', 'gpt-4o-mini', '[[emulator:malformed=1]]', { stream: true })));
    expect(badStream.failure.kind).toBe('malformed_response');
    const ac = new AbortController();
    const aborted = failure(h.gateway.dispatch(textReq('openai', 'gpt-4o-mini', '[[emulator:latency_ms=2000]]'), { signal: ac.signal }));
    setTimeout(() => ac.abort(), 50);
    expect((await aborted).failure.kind).toBe('aborted');
  });

  it('times out after the total timeout', async () => {
    const slow = await startHarness({ connectMs: 1000, totalMs: 200 });
    try {
      const err = await failure(slow.gateway.dispatch(textReq('openai', 'gpt-4o-mini', '[[emulator:latency_ms=1000]]')));
      expect(err.failure).toMatchObject({ kind: 'timeout', retryable: true });
    } finally {
      await slow.close();
    }
  });

  it('embeddings, images, speech and transcription', async () => {
    const emb = await h.gateway.dispatch({ operation: 'embed.text', provider: 'openai', model: 'text-embedding-3-small', stream: false, inputs: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }] });
    expect(emb.output.embeddings).toHaveLength(2);
    expect(emb.usage).toMatchObject({ input_tokens: 2, output_tokens: 0 });
    const img = await h.gateway.dispatch({ operation: 'generate.image', provider: 'openai', model: 'gpt-image-1', stream: false, messages: [{ role: 'user', content: 'a cat' }] });
    expect(img.output_assets[0]).toMatchObject({ type: 'image', mime_type: 'image/png' });
    expect(img.output_assets[0].data_b64).toBeTruthy();
    expect(img.usage.images).toBe(1);
    const tts = await h.gateway.dispatch({ operation: 'generate.audio', provider: 'openai', model: 'tts-1', stream: false, messages: [{ role: 'user', content: 'say hi' }] });
    expect(tts.output_assets[0]).toMatchObject({ type: 'audio', mime_type: 'audio/mpeg', url: null });
    expect(Buffer.from(tts.output_assets[0].data_b64!, 'base64').subarray(0, 3).toString()).toBe('ID3');
    expect(tts.usage.characters).toBe(6);
    const audioUrl = `${h.emu.url}/assets/echo?text=${encodeURIComponent('the quick brown fox')}&type=audio/mpeg`;
    const tr = await h.gateway.dispatch({ operation: 'transcribe.audio', provider: 'openai', model: 'whisper-1', stream: false, inputs: [{ type: 'audio', asset: { source: 'url', url: audioUrl, mime_type: 'audio/mpeg' } }] });
    expect(tr.output.content[0].text).toBe('the quick brown fox');
    expect(tr.usage.audio_seconds).toBe(1);
  });

  it('refuses an operation outside the matrix before dispatch', async () => {
    const err = await failure(h.gateway.dispatch({ operation: 'generate.image', provider: 'anthropic', model: 'x', stream: false, messages: [{ role: 'user', content: 'a' }] }));
    expect(err.failure).toMatchObject({ kind: 'http_error', status: 400, retryable: false });
  });
});
