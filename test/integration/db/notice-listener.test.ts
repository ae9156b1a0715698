/**
 * The LISTEN connection behind the caches that notices invalidate (src/db/notice-listener.ts):
 * notices arrive, a lost connection is reported and comes back, and what the caches must do at
 * each step (drop everything when lost, again once LISTEN is back) is called in that order.
 */
import { Pool } from 'pg';
import { listenForNotices, openNoticeChannel, type NoticeListener } from '../../../src/db/notice-listener';
import { waitUntil } from '../../support/wait';

describe('listenForNotices', () => {
  const db = new Pool({ connectionString: process.env.DATABASE_URL, max: 2 });
  const channel = `tollgate_test_${process.pid}_${Date.now()}`;
  let listener: NoticeListener | null = null;
  afterAll(async () => {
    await listener?.close();
    await db.end();
  });

  it('delivers notices, reports a lost connection and listens again after it', async () => {
    const calls: string[] = [];
    listener = listenForNotices({
      databaseUrl: process.env.DATABASE_URL!,
      channel,
      onNotice: (p) => calls.push(`notice:${p}`),
      onLost: () => calls.push('lost'),
      onListening: () => calls.push('listening'),
      lostMessage: 'test listener lost',
      retryMs: 100,
    });
    await waitUntil(async () => listener!.listening, 10_000, 20);
    await db.query('SELECT pg_notify($1, $2)', [channel, 'proj_a']);
    await waitUntil(async () => calls.includes('notice:proj_a'), 5_000, 20);

    // Terminate the listening backend: the listener notices, is not listening, then listens again.
    const { rows } = await db.query<{ n: number }>(
      "SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE query = $1 AND pid <> pg_backend_pid()",
      [`LISTEN ${channel}`],
    );
    expect(rows[0].n).toBe(1);
    await waitUntil(async () => calls.filter((c) => c === 'listening').length === 2 && listener!.listening, 10_000, 20);
    expect(calls.slice(0, 4)).toEqual(['listening', 'notice:proj_a', 'lost', 'listening']);

    await db.query('SELECT pg_notify($1, $2)', [channel, 'proj_b']);
    await waitUntil(async () => calls.includes('notice:proj_b'), 5_000, 20);

    await listener.close();
    expect(listener.listening).toBe(false);
    await db.query('SELECT pg_notify($1, $2)', [channel, 'proj_c']);
    await new Promise((r) => setTimeout(r, 200));
    expect(calls).not.toContain('notice:proj_c');
  });

  it('one channel connection serves every subscriber until it unsubscribes', async () => {
    const shared = `${channel}_shared`;
    const a: string[] = [];
    const b: string[] = [];
    const ch = openNoticeChannel({ databaseUrl: process.env.DATABASE_URL!, channel: shared, lostMessage: 'test channel lost', retryMs: 100 });
    try {
      ch.subscribe({ onNotice: (p) => a.push(p) });
      const unsubscribeB = ch.subscribe({ onNotice: (p) => b.push(p) });
      await waitUntil(async () => ch.listening, 10_000, 20);
      const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE query = $1', [`LISTEN ${shared}`]);
      expect(rows[0].n).toBe(1);
      await db.query('SELECT pg_notify($1, $2)', [shared, 'proj_a']);
      await waitUntil(async () => a.includes('proj_a') && b.includes('proj_a'), 5_000, 20);
      unsubscribeB();
      await db.query('SELECT pg_notify($1, $2)', [shared, 'proj_b']);
      await waitUntil(async () => a.includes('proj_b'), 5_000, 20);
      expect(b).toEqual(['proj_a']);
    } finally {
      await ch.close();
    }
  });
});
