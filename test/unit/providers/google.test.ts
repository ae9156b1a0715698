import { providerModules } from '../../../src/providers';
import { countTokens } from '../../../src/pricing/tokenizer';
import { chatScenarios, noCtx, startHarness, textReq, type Harness } from './helpers';

const google = providerModules.google;
let h: Harness;
beforeAll(async () => { h = await startHarness(); });
afterAll(async () => { await h.close(); });

describe('google adapter', () => {
  it('builds generateContent / streamGenerateContent with systemInstruction and generationConfig', async () => {
    const call = await google.buildRequest(
      textReq('google', 'gemini-2.5-flash', 'hi', {
        messages: [{ role: 'system', content: 's' }, { role: 'user', content: 'hi' }, { role: 'assistant', content: 'yo' }],
        parameters: { max_output_tokens: 20, top_p: 0.5 },
        providerOptions: { generationConfig: { topK: 3, maxOutputTokens: 999 } },
      }),
      noCtx,
    );
    expect(call.path).toBe('/v1beta/models/gemini-2.5-flash:generateContent');
    expect(call.body).toEqual({
      contents: [{ role: 'user', parts: [{ text: 'hi' }] }, { role: 'model', parts: [{ text: 'yo' }] }],
      systemInstruction: { parts: [{ text: 's' }] },
      generationConfig: { topK: 3, maxOutputTokens: 20, topP: 0.5 },
    });
    const s = await google.buildRequest(textReq('google', 'gemini-2.5-flash', 'hi', { stream: true }), noCtx);
    expect(s).toMatchObject({ path: '/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse', responseKind: 'sse' });
    expect(google.authHeaders('k')).toEqual({ 'x-goog-api-key': 'k' });
  });

  it('sends image and audio assets as fileData parts; transcription gets an instruction', async () => {
    const call = await google.buildRequest(
      { operation: 'transcribe.audio', provider: 'google', model: 'gemini-2.5-flash', stream: false, inputs: [{ type: 'audio', asset: { source: 'url', url: 'https://x/a.mp3', mime_type: 'audio/mpeg' } }] },
      noCtx,
    );
    expect((call.body as any).contents[0].parts).toEqual([{ fileData: { fileUri: 'https://x/a.mp3', mimeType: 'audio/mpeg' } }, { text: expect.stringContaining('Transcribe') }]);
  });

  it('usageMetadata → usage with cached and thoughts tokens', () => {
    expect(google.extractUsageFromNative('/v1beta/models/x:generateContent', { usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 5, thoughtsTokenCount: 3, cachedContentTokenCount: 4, totalTokenCount: 18 } }))
      .toMatchObject({ input_tokens: 10, output_tokens: 8, reasoning_tokens: 3, cached_input_tokens: 4, total_tokens: 18 });
    expect(google.extractStreamUsage([{ data: JSON.stringify({ usageMetadata: { promptTokenCount: 2, totalTokenCount: 2 } }) }, { data: JSON.stringify({ usageMetadata: { promptTokenCount: 2, candidatesTokenCount: 6, totalTokenCount: 8 } }) }]))
      .toMatchObject({ input_tokens: 2, output_tokens: 6 });
    expect(google.mapError(429, { error: { code: 429, message: 'quota', status: 'RESOURCE_EXHAUSTED' } }, { 'retry-after': '4' })).toMatchObject({ kind: 'rate_limited', retry_after_seconds: 4, message: 'quota' });
  });
});

describe('google through the gateway', () => {
  chatScenarios(() => h, 'google', 'gemini-2.5-flash');

  it('embeddings (single and batch), understand.image, transcribe.audio', async () => {
    const one = await h.gateway.dispatch({ operation: 'embed.text', provider: 'google', model: 'gemini-embedding-001', stream: false, inputs: [{ type: 'text', text: 'hello' }] });
    expect(one.output.embeddings).toHaveLength(1);
    expect(one.usage).toMatchObject({ input_tokens: countTokens('hello'), estimated: true });
    const two = await h.gateway.dispatch({ operation: 'embed.text', provider: 'google', model: 'gemini-embedding-001', stream: false, inputs: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }] });
    expect(two.output.embeddings).toHaveLength(2);
    const vision = await h.gateway.dispatch({ operation: 'understand.image', provider: 'google', model: 'gemini-2.5-flash', stream: false, inputs: [{ type: 'text', text: 'describe' }, { type: 'image', asset: { source: 'url', url: 'https://x/cat.png', mime_type: 'image/png' } }] });
    expect(vision.output.content[0].text).toContain('image/png');
    const tr = await h.gateway.dispatch({ operation: 'transcribe.audio', provider: 'google', model: 'gemini-2.5-flash', stream: false, inputs: [{ type: 'audio', asset: { source: 'url', url: 'https://x/a.mp3', mime_type: 'audio/mpeg' } }] });
    expect(tr.output.content[0].text).toContain('audio/mpeg');
    expect(tr.usage.estimated).toBe(false);
  });
});
