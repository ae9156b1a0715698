/** DeepSeek has no SDK of its own; its documented client is the openai SDK with DeepSeek's base URL. */
import OpenAI from 'openai';
import { startEmulator, type EmulatorHandle } from '../../emulator/server';

let emu: EmulatorHandle;
let client: OpenAI;
beforeAll(async () => {
  emu = await startEmulator({ port: 0 });
  client = new OpenAI({ apiKey: 'ds-test', baseURL: `${emu.url}/deepseek`, maxRetries: 0 });
});
afterAll(async () => { await emu.close(); });

describe('deepseek (openai SDK) against the emulator', () => {
  it('chat with prompt cache fields', async () => {
    const r = await client.chat.completions.create({ model: 'deepseek-chat', messages: [{ role: 'user', content: 'hello deepseek [[emulator:cached_tokens=2]]' }] });
    expect(r.choices[0].message.content).toContain('hello deepseek');
    expect((r.usage as unknown as Record<string, number>).prompt_cache_hit_tokens).toBe(2);
  });
  it('streaming with final-chunk usage', async () => {
    const stream = await client.chat.completions.create({ model: 'deepseek-chat', stream: true, messages: [{ role: 'user', content: 'stream ds' }] });
    let text = '';
    let usage = 0;
    for await (const c of stream) {
      text += c.choices[0]?.delta?.content ?? '';
      usage = c.usage?.completion_tokens ?? usage;
    }
    expect(text).toContain('stream ds');
    expect(usage).toBeGreaterThan(0);
  });
});
