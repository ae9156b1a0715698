/**
 * The emulator's delays (latency, time to first token, chunk delay) end when the caller hangs up,
 * as a provider stops on a closed connection: no timer of an abandoned call outlives it.
 */
import { startEmulator, type EmulatorHandle } from '../../../emulator/server';
import { waitUntil } from '../../support/wait';

describe('emulator delays and a caller that hangs up', () => {
  let emu: EmulatorHandle;
  beforeAll(async () => {
    emu = await startEmulator();
  });
  afterAll(() => emu.close());

  const send = (headers: Record<string, string>, body: Record<string, unknown> = {}, signal?: AbortSignal) =>
    fetch(`${emu.url}/openai/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: 'Bearer test', 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello' }], ...body }),
      signal,
    });

  async function hangUpOn(headers: Record<string, string>, body: Record<string, unknown> = {}): Promise<void> {
    const ac = new AbortController();
    const res = send(headers, body, ac.signal).catch(() => undefined);
    // The emulator has the request and is waiting out its 60 s.
    await waitUntil(async () => emu.inProgress() === 1, 10_000, 10);
    await new Promise((r) => setTimeout(r, 100));
    expect(emu.inProgress()).toBe(1);
    ac.abort();
    await res;
    await waitUntil(async () => emu.inProgress() === 0, 5_000, 10);
  }

  it('ends a latency wait', async () => {
    await hangUpOn({ 'x-emulator-latency-ms': '60000' });
  });

  it('ends the wait for the first token of a stream', async () => {
    await hangUpOn({ 'x-emulator-ttft-ms': '60000' }, { stream: true });
  });

  it('ends the wait between two stream chunks', async () => {
    await hangUpOn({ 'x-emulator-chunk-delay-ms': '60000' }, { stream: true });
  });

  it('still answers a caller that waits', async () => {
    const res = await send({ 'x-emulator-latency-ms': '50' });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { object: string }).object).toBe('chat.completion');
    expect(emu.inProgress()).toBe(0);
  });
});
