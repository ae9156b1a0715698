/** The official @mistralai/mistralai SDK as a real client of the emulator. */
import { Mistral } from '@mistralai/mistralai';
import { startEmulator, type EmulatorHandle } from '../../emulator/server';

let emu: EmulatorHandle;
let client: Mistral;
beforeAll(async () => {
  emu = await startEmulator({ port: 0 });
  client = new Mistral({ apiKey: 'm-test', serverURL: `${emu.url}/mistral` });
});
afterAll(async () => { await emu.close(); });

describe('mistral SDK against the emulator', () => {
  it('chat', async () => {
    const r = await client.chat.complete({ model: 'mistral-small-latest', messages: [{ role: 'user', content: 'hello mistral' }] });
    expect(String(r.choices?.[0].message?.content)).toContain('hello mistral');
    expect(r.usage.promptTokens).toBeGreaterThan(0);
  });

  it('streaming with final-chunk usage', async () => {
    const stream = await client.chat.stream({ model: 'mistral-small-latest', messages: [{ role: 'user', content: 'stream mistral' }] });
    let text = '';
    let completion = 0;
    for await (const ev of stream) {
      text += String(ev.data.choices[0]?.delta?.content ?? '');
      completion = ev.data.usage?.completionTokens ?? completion;
    }
    expect(text).toContain('stream mistral');
    expect(completion).toBeGreaterThan(0);
  });

  it('vision (image_url) and embeddings', async () => {
    const v = await client.chat.complete({ model: 'mistral-small-latest', messages: [{ role: 'user', content: [{ type: 'text', text: 'look' }, { type: 'image_url', imageUrl: 'https://x/c.png' }] }] });
    expect(String(v.choices?.[0].message?.content)).toContain('look');
    const e = await client.embeddings.create({ model: 'mistral-embed', inputs: ['a', 'b'] });
    expect(e.data).toHaveLength(2);
  });

  it('native errors', async () => {
    await expect(client.chat.complete({ model: 'mistral-small-latest', messages: [{ role: 'user', content: '[[emulator:status=400]]' }] })).rejects.toMatchObject({ statusCode: 400 });
  });
});
