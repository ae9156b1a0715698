/** Shared set-up for provider adapter tests: an in-process emulator and a gateway pointed at it. */
import { createProviderGateway, type ProviderGatewayWithClose } from '../../../src/providers';
import { ProviderError, type NormalizedRequest, type ProviderId } from '../../../src/providers/types';
import { startEmulator, type EmulatorHandle } from '../../../emulator/server';
import { PROVIDER_IDS } from '../../../src/config';

export interface Harness {
  emu: EmulatorHandle;
  gateway: ProviderGatewayWithClose;
  close(): Promise<void>;
}

/**
 * The default timeouts are far above what a local emulator takes, so a stalled CI machine does not
 * fail a call (a loaded run took over 10 s for one); the tests of timeouts pass their own.
 */
export async function startHarness(timeouts = { connectMs: 10_000, totalMs: 45_000 }): Promise<Harness> {
  const emu = await startEmulator({ port: 0 });
  const providers = Object.fromEntries(PROVIDER_IDS.map((p) => [p, { baseUrl: `${emu.url}/${p}`, apiKey: 'test-key' }])) as Record<
    ProviderId,
    { baseUrl: string; apiKey: string }
  >;
  const gateway = createProviderGateway({ providers, providerTimeouts: timeouts });
  return { emu, gateway, close: async () => { await gateway.close(); await emu.close(); } };
}

export function textReq(provider: ProviderId, model: string, content: string, extra: Partial<NormalizedRequest> = {}): NormalizedRequest {
  return { operation: 'generate.text', provider, model, messages: [{ role: 'user', content }], stream: false, ...extra };
}

/** Runs a dispatch expected to fail and returns the ProviderError. */
export async function failure(p: Promise<unknown>): Promise<ProviderError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof ProviderError) return err;
    throw err;
  }
  throw new Error('expected the dispatch to fail');
}

export const noCtx = { fetchAsset: async () => { throw new Error('no asset fetch expected'); } };

/** The common gateway scenarios every chat provider must pass (sync, stream, no usage, break, faults). */
export function chatScenarios(get: () => Harness, provider: ProviderId, model: string, opts: { overloadedStatus?: number; reportsCached?: boolean } = {}) {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { countChatTokens, countTokens } = require('../../../src/pricing/tokenizer') as typeof import('../../../src/pricing/tokenizer');
  const gw = () => get().gateway;
  it(`${provider}: sync chat with exact usage`, async () => {
    const r = await gw().dispatch(textReq(provider, model, 'hello there', { messages: [{ role: 'system', content: 'sys' }, { role: 'user', content: 'hello there' }] }));
    expect(r.output.content[0].text).toContain('you said "hello there"');
    expect(r.usage).toMatchObject({ input_tokens: countChatTokens(['sys', 'hello there']), output_tokens: countTokens(r.output.content[0].text), estimated: false });
  });
  it(`${provider}: stream deltas and final usage, with cached tokens`, async () => {
    const deltas: string[] = [];
    const r = await gw().dispatch(textReq(provider, model, 'stream it [[emulator:cached_tokens=3]]', { stream: true }), { onDelta: (d) => deltas.push(d) });
    expect(deltas.length).toBeGreaterThan(3);
    expect(deltas.join('')).toBe(r.output.content[0].text);
    expect(r.usage.cached_input_tokens).toBe(opts.reportsCached === false ? undefined : 3);
    expect(r.usage).toMatchObject({ estimated: false, input_tokens: countChatTokens(['stream it [[emulator:cached_tokens=3]]']), output_tokens: countTokens(r.output.content[0].text) });
  });
  it(`${provider}: stream without usage → estimated`, async () => {
    const r = await gw().dispatch(textReq(provider, model, 'x [[emulator:omit_usage=1]]', { stream: true }));
    expect(r.usage).toMatchObject({ estimated: true, input_tokens: countChatTokens(['x [[emulator:omit_usage=1]]']), output_tokens: countTokens(r.output.content[0].text) });
  });
  it(`${provider}: broken stream → stream_broken with estimated partial usage`, async () => {
    const seen: string[] = [];
    const err = await failure(gw().dispatch(textReq(provider, model, 'y [[emulator:stream_break_after=5]]', { stream: true }), { onDelta: (d) => seen.push(d) }));
    expect(err.failure).toMatchObject({ kind: 'stream_broken', retryable: true });
    expect(seen.length).toBeGreaterThan(0);
    expect(err.partialUsage).toMatchObject({ estimated: true, output_tokens: countTokens(seen.join('')) });
  });
  it(`${provider}: fault classification`, async () => {
    const cases: [string, object][] = [
      ['status=500', { kind: 'http_error', status: 500, retryable: true }],
      ['status=429,retry_after=3', { kind: 'rate_limited', status: 429, retryable: true, retry_after_seconds: 3 }],
      ['status=400', { kind: 'http_error', status: 400, retryable: false }],
      ['status=401', { kind: 'http_error', status: 401, retryable: false }],
      [`status=${opts.overloadedStatus ?? 503}`, { kind: 'overloaded', retryable: true }],
      ['malformed=1', { kind: 'malformed_response' }],
    ];
    for (const [marker, expected] of cases) {
      const err = await failure(gw().dispatch(textReq(provider, model, `[[emulator:${marker}]]`)));
      expect({ marker, ...err.failure }).toMatchObject({ marker, ...expected });
      if (err.failure.status) expect(err.failure.native).toBeTruthy();
    }
    const streamBad = await failure(gw().dispatch(textReq(provider, model, '[[emulator:malformed=1]]', { stream: true })));
    expect(streamBad.failure.kind).toBe('malformed_response');
    expect(streamBad.partialUsage?.estimated).toBe(true);
  });
}
