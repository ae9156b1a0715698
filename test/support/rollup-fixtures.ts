/** What the rollup tests share: a reproducible random sequence and a provider that answers every call. */
import type { ProviderGateway } from '../../src/providers/types';

/** A pseudo-random sequence, so a failure reproduces. */
export function seededRandom(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    return s / 2 ** 31;
  };
}

/** A provider that answers "ok" with 10 input and 5 output tokens. */
export const answeringProvider: ProviderGateway = {
  dispatch: async () => ({
    output: { content: [{ type: 'text', role: 'assistant', text: 'ok' }] },
    output_assets: [],
    usage: { input_tokens: 10, output_tokens: 5, total_tokens: 15, metrics: [], estimated: false },
    finish_reason: 'stop',
  }),
};
