/** The official @anthropic-ai/sdk as a real client of the emulator. */
import Anthropic from '@anthropic-ai/sdk';
import { startEmulator, type EmulatorHandle } from '../../emulator/server';

let emu: EmulatorHandle;
let client: Anthropic;
beforeAll(async () => {
  emu = await startEmulator({ port: 0 });
  client = new Anthropic({ apiKey: 'sk-ant-test', baseURL: `${emu.url}/anthropic`, maxRetries: 0 });
});
afterAll(async () => { await emu.close(); });

describe('anthropic SDK against the emulator', () => {
  it('messages', async () => {
    const r = await client.messages.create({ model: 'claude-haiku-4-5', max_tokens: 200, system: 'be nice', messages: [{ role: 'user', content: 'hello claude' }] });
    expect(r.content[0].type === 'text' && r.content[0].text).toContain('hello claude');
    expect(r.usage.input_tokens).toBeGreaterThan(0);
  });

  it('streaming (raw events and the MessageStream helper)', async () => {
    const stream = await client.messages.create({ model: 'claude-haiku-4-5', max_tokens: 200, stream: true, messages: [{ role: 'user', content: 'stream claude' }] });
    const types: string[] = [];
    for await (const ev of stream) types.push(ev.type);
    expect(types[0]).toBe('message_start');
    expect(types).toContain('content_block_delta');
    expect(types[types.length - 1]).toBe('message_stop');
    const final = await client.messages.stream({ model: 'claude-haiku-4-5', max_tokens: 200, messages: [{ role: 'user', content: 'helper' }] }).finalMessage();
    expect(final.usage.output_tokens).toBeGreaterThan(1);
    expect(final.content[0].type === 'text' && final.content[0].text).toContain('helper');
  });

  it('native errors: 529 overloaded', async () => {
    await expect(client.messages.create({ model: 'claude-haiku-4-5', max_tokens: 10, messages: [{ role: 'user', content: '[[emulator:status=529]]' }] })).rejects.toMatchObject({ status: 529 });
  });
});
