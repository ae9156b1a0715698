/** The request bodies and projects the gateway benches send (bench:gateway and its modes). */
import type { Stack } from './stack';

const PROMPT = 'Summarise the benefits of governed execution in one sentence.';

/** An OpenAI chat completion body and the same request as a governed execution. */
export const BENCH_BODIES = {
  openai: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: PROMPT }], max_tokens: 64 },
  governed: { operation: 'generate.text', messages: [{ role: 'user', content: PROMPT }], routing: { provider: 'openai', model: 'gpt-4o-mini' }, parameters: { max_output_tokens: 64 } },
};

/** One project's key, and `spreadOver` more projects' Authorization headers (one per connection). */
export async function benchProjects(stack: Stack, spreadOver = 32): Promise<{ key: string; spread: Record<string, string>[] }> {
  const { key } = await stack.newProjectKey('bench');
  const spread: Record<string, string>[] = [];
  for (let i = 0; i < spreadOver; i++) spread.push({ authorization: `Bearer ${(await stack.newProjectKey(`bench-${i}`)).key}` });
  return { key, spread };
}
