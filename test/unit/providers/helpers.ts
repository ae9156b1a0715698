/** Shared set-up for provider adapter tests: an in-process emulator and a gateway pointed at it. */
import { createProviderGateway, type ProviderGatewayWithClose } from '../../../src/providers';
import { ProviderError, type NormalizedRequest, type ProviderId } from '../../../src/providers/types';
import { startEmulator, type EmulatorHandle } from '../../../src/emulator/server';
import { PROVIDER_IDS } from '../../../src/config';

export interface Harness {
  emu: EmulatorHandle;
  gateway: ProviderGatewayWithClose;
  close(): Promise<void>;
}

export async function startHarness(timeouts = { connectMs: 2000, totalMs: 10000 }): Promise<Harness> {
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
