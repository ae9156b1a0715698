/** Polls `fn` until it returns a truthy value (which is returned), or fails after `ms`. */
export async function waitUntil<T>(fn: () => Promise<T | null | undefined | false>, ms = 15_000, everyMs = 100): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
