/** Permit read models (src/permits/read-models.ts): listing, bundle, export, and expiry derived from expires_at. */
import { permitsSuite } from './helpers';

describe('permit-first API: read models', () => {
  const suite = permitsSuite();
  const { call, project, setPolicy, issue, declare } = suite;

  describe('listing, bundle, export', () => {
    it('filters by decision, reason_code, workflow_id and time, with cursor pagination', async () => {
      const p = await project();
      await setPolicy(p, { deny_rules: [{ id: 'no-mistral', match: { provider: 'mistral' } }] });
      const start = new Date().toISOString();
      await declare(p, 'wf_a');
      await declare(p, 'wf_b');
      for (let i = 0; i < 5; i++) await issue(p, { workflow_id: i < 2 ? 'wf_a' : 'wf_b' });
      await issue(p, { provider: 'mistral', model: 'mistral-small-latest' });
      const all = await call('GET', '/v1/permits?limit=2', { key: p.clientKey });
      expect(all.json).toMatchObject({ object: 'list', has_more: true });
      const seen: string[] = all.json.data.map((x: any) => x.permit_id);
      let cursor = all.json.next_cursor;
      while (cursor) {
        const page = await call('GET', `/v1/permits?limit=2&cursor=${cursor}`, { key: p.clientKey });
        seen.push(...page.json.data.map((x: any) => x.permit_id));
        cursor = page.json.next_cursor;
      }
      expect(new Set(seen).size).toBe(6);
      const denied = await call('GET', '/v1/permits?decision=deny', { key: p.clientKey });
      expect(denied.json.data.map((x: any) => x.reason_code)).toEqual(['policy.rule_denied']);
      expect((await call('GET', '/v1/permits?reason_code=policy.rule_denied', { key: p.clientKey })).json.data).toHaveLength(1);
      expect((await call('GET', '/v1/permits?workflow_id=wf_a', { key: p.clientKey })).json.data).toHaveLength(2);
      expect((await call('GET', `/v1/permits?created_after=${encodeURIComponent(start)}`, { key: p.clientKey })).json.data).toHaveLength(6);
      expect((await call('GET', `/v1/permits?created_before=${encodeURIComponent(start)}`, { key: p.clientKey })).json.data).toHaveLength(0);
      expect((await call('GET', '/v1/permits?cursor=garbage', { key: p.clientKey })).status).toBe(400);
      expect((await call('GET', '/v1/permits?decision=maybe', { key: p.clientKey })).status).toBe(400);
    });

    it('bundle holds the permit and its hash-chained events', async () => {
      const p = await project();
      const res = await issue(p);
      const b = await call('GET', `/v1/permits/${res.json.permit_id}/bundle`, { key: p.clientKey });
      expect(b.status).toBe(200);
      expect(b.json.permit.permit_id).toBe(res.json.permit_id);
      expect(b.json.events.map((e: any) => e.event_type)).toEqual(['permit.allowed', 'permit.expiry_scheduled']);
      expect(b.json.events[0]).toMatchObject({ hash: expect.stringMatching(/^[0-9a-f]{64}$/), source: 'permits', phase: 'permit' });
    });

    it('exports a time window as NDJSON (routes /export and /dry-run are not captured by /:id)', async () => {
      const p = await project();
      const before = await issue(p);
      await new Promise((r) => setTimeout(r, 30));
      const from = new Date().toISOString();
      const inside = [await issue(p), await issue(p, { model: 'gpt-4o' })];
      await new Promise((r) => setTimeout(r, 30));
      const to = new Date().toISOString();
      await new Promise((r) => setTimeout(r, 30));
      await issue(p);
      const res = await call('GET', `/v1/permits/export?from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`, { key: p.clientKey });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/application\/x-ndjson/);
      const lines = res.text.trim().split('\n').map((l) => JSON.parse(l));
      expect(lines[0]).toMatchObject({ object: 'permit_export', project_id: p.project.id, from, to });
      expect(lines[lines.length - 1]).toEqual({ object: 'permit_export_end', count: 2 });
      const permits = lines.slice(1, -1);
      expect(permits.map((l) => l.permit_id)).toEqual(inside.map((r) => r.json.permit_id));
      expect(permits.map((l) => l.permit_id)).not.toContain(before.json.permit_id);
      expect(permits[0].events.map((e: any) => e.event_type)).toContain('permit.allowed');
      expect((await call('GET', '/v1/permits/export', { key: p.clientKey })).status).toBe(400);
    });
  });

  describe('expiry', () => {
    it('expiry: an allow past expires_at releases its reservation and shows permit.expired', async () => {
      const p = await project();
      const permit = (await issue(p, { ttl_seconds: 1 })).json;
      await new Promise((r) => setTimeout(r, 1200));
      const got = await call('GET', `/v1/permits/${permit.permit_id}`, { key: p.clientKey });
      expect(got.json).toMatchObject({ status: 'expired', expired: true, reservation: { state: 'expired', release_reason: 'permit_expired' } });
      const tl = await call('GET', `/v1/permits/${permit.permit_id}/timeline`, { key: p.clientKey });
      expect(tl.json.events.map((e: any) => e.event_type)).toEqual(['permit.allowed', 'permit.expiry_scheduled', 'permit.expired']);
    });

    it('expiry of a review permit is derived from expires_at in the bundle; attesting it is refused', async () => {
      const p = await project();
      await setPolicy(p, { review_rules: [{ id: 'all', match: {} }] });
      const review = (await issue(p, { ttl_seconds: 1 })).json;
      await new Promise((r) => setTimeout(r, 1200));
      const b = await call('GET', `/v1/permits/${review.permit_id}/bundle`, { key: p.clientKey });
      expect(b.json.permit.status).toBe('expired');
      expect(b.json.events.map((e: any) => e.event_type)).toEqual(['permit.challenged', 'permit.expiry_scheduled', 'permit.expired']);
      expect(b.json.events[2]).toMatchObject({ derived: true, hash: null, metadata: { derived_from: 'expires_at' } });
      const res = await call('POST', `/v1/permits/${review.permit_id}/attest`, { key: p.adminKey, body: { attested_by: 'x', reason: 'late' } });
      expect(res.status).toBe(409);
      expect(res.json.error.code).toBe('permit_expired');
    });
  });
});
