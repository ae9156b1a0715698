import { providerModules } from '../../../src/providers';
import { chatScenarios, noCtx, startHarness, textReq, type Harness } from './helpers';

const mistral = providerModules.mistral;
let h: Harness;
beforeAll(async () => { h = await startHarness(); });
afterAll(async () => { await h.close(); });

describe('mistral adapter', () => {
  it('builds chat without stream_options, and vision image_url parts', async () => {
    const call = await mistral.buildRequest(textReq('mistral', 'mistral-small-latest', 'hi', { stream: true, parameters: { max_output_tokens: 5 } }), noCtx);
    expect(call.body).toEqual({ model: 'mistral-small-latest', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5, stream: true });
    const vision = await mistral.buildRequest({ operation: 'understand.image', provider: 'mistral', model: 'mistral-small-latest', stream: false, inputs: [{ type: 'image', asset: { source: 'url', url: 'https://x/c.png' } }] }, noCtx);
    expect((vision.body as any).messages[0].content).toEqual([{ type: 'image_url', image_url: { url: 'https://x/c.png' } }]);
  });
  it('maps mistral error bodies', () => {
    expect(mistral.mapError(400, { object: 'error', message: 'bad', type: 'invalid_request_error' })).toMatchObject({ kind: 'http_error', message: 'bad', retryable: false });
    expect(mistral.mapError(401, { message: 'Unauthorized' })).toMatchObject({ message: 'Unauthorized' });
  });
});

describe('mistral through the gateway', () => {
  chatScenarios(() => h, 'mistral', 'mistral-small-latest', { reportsCached: false });
  it('embeddings and vision', async () => {
    const emb = await h.gateway.dispatch({ operation: 'embed.text', provider: 'mistral', model: 'mistral-embed', stream: false, messages: [{ role: 'user', content: 'x' }] });
    expect(emb.output.embeddings![0]).toHaveLength(16);
    expect(emb.usage).toMatchObject({ input_tokens: 1, output_tokens: 0, estimated: false });
    const v = await h.gateway.dispatch({ operation: 'understand.image', provider: 'mistral', model: 'mistral-small-latest', stream: false, inputs: [{ type: 'text', text: 'what' }, { type: 'image', asset: { source: 'url', url: 'https://x/c.png' } }] });
    expect(v.output.content[0].text).toContain('you said "what"');
  });
});
