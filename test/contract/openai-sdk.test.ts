/** The official openai SDK as a real client of the emulator: if it parses it, the wire format is right. */
import OpenAI, { toFile } from 'openai';
import { startEmulator, type EmulatorHandle } from '../../emulator/server';

let emu: EmulatorHandle;
let client: OpenAI;
beforeAll(async () => {
  emu = await startEmulator({ port: 0 });
  client = new OpenAI({ apiKey: 'sk-test', baseURL: `${emu.url}/openai/v1`, maxRetries: 0 });
});
afterAll(async () => { await emu.close(); });

describe('openai SDK against the emulator', () => {
  it('chat completions', async () => {
    const r = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello sdk' }] });
    expect(r.choices[0].message.content).toContain('hello sdk');
    expect(r.usage?.prompt_tokens).toBeGreaterThan(0);
  });

  it('streaming with include_usage', async () => {
    const stream = await client.chat.completions.create({ model: 'gpt-4o-mini', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'stream sdk' }] });
    let text = '';
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toContain('stream sdk');
    expect(usage?.completion_tokens).toBeGreaterThan(0);
  });

  it('embeddings (SDK default base64 encoding)', async () => {
    const r = await client.embeddings.create({ model: 'text-embedding-3-small', input: ['a', 'b'] });
    expect(r.data).toHaveLength(2);
    expect(r.data[0].embedding).toHaveLength(16);
    expect(typeof r.data[0].embedding[0]).toBe('number');
  });

  it('image generation', async () => {
    const r = await client.images.generate({ model: 'gpt-image-1', prompt: 'a cat' });
    expect(r.data?.[0].b64_json).toBeTruthy();
    const url = await client.images.generate({ model: 'dall-e-3', prompt: 'a dog' });
    expect(url.data?.[0].url).toMatch(/^http/);
  });

  it('speech', async () => {
    const r = await client.audio.speech.create({ model: 'tts-1', voice: 'alloy', input: 'hello' });
    const bytes = Buffer.from(await r.arrayBuffer());
    expect(bytes.subarray(0, 3).toString()).toBe('ID3');
  });

  it('transcription (multipart)', async () => {
    const r = await client.audio.transcriptions.create({ model: 'whisper-1', file: await toFile(Buffer.from('spoken words'), 'a.mp3', { type: 'audio/mpeg' }) });
    expect(r.text).toBe('spoken words');
  });

  it('native errors: 429 and missing key', async () => {
    await expect(client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: '[[emulator:status=429]]' }] })).rejects.toMatchObject({ status: 429 });
    const res = await fetch(`${emu.url}/openai/v1/chat/completions`, { method: 'POST', body: '{}' });
    expect(res.status).toBe(401);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('invalid_api_key');
  });
});
