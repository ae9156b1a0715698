/** The official @google/genai SDK (its CommonJS build) as a real client of the emulator. */
import { GoogleGenAI } from '@google/genai';
import { startEmulator, type EmulatorHandle } from '../../emulator/server';

let emu: EmulatorHandle;
let ai: GoogleGenAI;
beforeAll(async () => {
  emu = await startEmulator({ port: 0 });
  ai = new GoogleGenAI({ apiKey: 'g-test', httpOptions: { baseUrl: `${emu.url}/google` } });
});
afterAll(async () => { await emu.close(); });

describe('@google/genai against the emulator', () => {
  it('generateContent', async () => {
    const r = await ai.models.generateContent({ model: 'gemini-2.5-flash', contents: 'hello gemini' });
    expect(r.text).toContain('hello gemini');
    expect(r.usageMetadata?.promptTokenCount).toBeGreaterThan(0);
  });

  it('generateContentStream (alt=sse)', async () => {
    const stream = await ai.models.generateContentStream({ model: 'gemini-2.5-flash', contents: 'stream gemini' });
    let text = '';
    let total = 0;
    for await (const chunk of stream) {
      text += chunk.text ?? '';
      total = chunk.usageMetadata?.totalTokenCount ?? total;
    }
    expect(text).toContain('stream gemini');
    expect(total).toBeGreaterThan(0);
  });

  it('embedContent', async () => {
    const r = await ai.models.embedContent({ model: 'gemini-embedding-001', contents: ['a', 'b'] });
    expect(r.embeddings).toHaveLength(2);
    expect(r.embeddings?.[0].values).toHaveLength(16);
  });

  it('audio part (fileData) transcription-style prompt', async () => {
    const r = await ai.models.generateContent({
      model: 'gemini-2.5-flash',
      contents: [{ role: 'user', parts: [{ fileData: { fileUri: 'https://x/a.mp3', mimeType: 'audio/mpeg' } }, { text: 'Transcribe' }] }],
    });
    expect(r.text).toContain('Transcribe');
  });

  it('native errors', async () => {
    await expect(ai.models.generateContent({ model: 'gemini-2.5-flash', contents: '[[emulator:status=429]]' })).rejects.toThrow(/429|RESOURCE_EXHAUSTED/);
  });
});
