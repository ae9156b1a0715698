/** Human review and revocation: POST /v1/permits/{id}/attest and /revoke (src/permits/review.ts). */
import { permitsSuite } from './helpers';

describe('permit-first API: review and revocation', () => {
  const suite = permitsSuite();
  const { call, project, setPolicy, issue } = suite;

  describe('attest, revoke, timeline', () => {
    it('attest turns a review permit into an allow child with a reservation (admin only)', async () => {
      const p = await project();
      await setPolicy(p, { review_rules: [{ id: 'expensive', match: {}, min_estimated_cost_usd_micros: 500 }] });
      const review = (await issue(p)).json;
      expect(review.decision).toBe('review');
      const body = { attested_by: 'alice@example.com', reason: 'Approved for the quarterly report' };
      const denied = await call('POST', `/v1/permits/${review.permit_id}/attest`, { key: p.clientKey, body });
      expect(denied.status).toBe(403);
      expect(denied.json.error.code).toBe('insufficient_scope');
      const res = await call('POST', `/v1/permits/${review.permit_id}/attest`, { key: p.adminKey, body });
      expect(res.status).toBe(201);
      expect(res.json.attestation).toMatchObject({ permit_id: review.permit_id, attested_by: 'alice@example.com', reason: body.reason, attested_at: expect.any(String) });
      expect(res.json.permit).toMatchObject({ permit_id: review.permit_id, decision: 'review', status: 'attested' });
      const allowed = res.json.allowed_permit;
      expect(res.headers.get('x-svc-permit-id')).toBe(allowed.permit_id);
      expect(allowed).toMatchObject({
        decision: 'allow', reason_code: 'policy.review_attested', parent_permit_id: review.permit_id, lineage_reason: 'attestation',
        status: 'active', reservation: { state: 'active', reserved_cost_usd_micros: 750 }, request_id: review.request_id,
      });
      const again = await call('POST', `/v1/permits/${review.permit_id}/attest`, { key: p.adminKey, body });
      expect(again.status).toBe(409);
      expect(again.json.error).toMatchObject({ code: 'permit_already_attested', details: { child_permit_id: allowed.permit_id } });
      const notReview = await call('POST', `/v1/permits/${allowed.permit_id}/attest`, { key: p.adminKey, body });
      expect(notReview.status).toBe(409);
      // Timeline: issued → challenged → attested on the review permit; allowed on the child.
      const tl = await call('GET', `/v1/permits/${review.permit_id}/timeline`, { key: p.clientKey });
      expect(tl.status).toBe(200);
      expect(tl.json.events.map((e: any) => e.event_type)).toEqual(['permit.challenged', 'permit.expiry_scheduled', 'permit.attested']);
      expect(tl.json.related_permit_ids).toEqual([allowed.permit_id]);
      const childTl = await call('GET', `/v1/permits/${allowed.permit_id}/timeline`, { key: p.clientKey });
      expect(childTl.json.events.map((e: any) => e.event_type)).toEqual(['permit.allowed', 'permit.expiry_scheduled']);
      const lineage = await call('GET', `/v1/permits/${allowed.permit_id}/lineage`, { key: p.clientKey });
      expect(lineage.json.chain).toEqual([review.permit_id, allowed.permit_id]);
    });

    it('attestation is refused when a cap now denies the request', async () => {
      const p = await project();
      await setPolicy(p, { review_rules: [{ id: 'all', match: {} }] });
      const review = (await issue(p)).json;
      await setPolicy(p, { budgets: { per_request_usd_micros: 100 } });
      const res = await call('POST', `/v1/permits/${review.permit_id}/attest`, { key: p.adminKey, body: { attested_by: 'bob', reason: 'ok' } });
      expect(res.status).toBe(409);
      expect(res.json.error).toMatchObject({ code: 'attestation_blocked', details: { reason_code: 'budget.request_cap_exceeded' } });
    });

    it('revoke needs admin scope, records actor and reason, releases the reservation, emits permit.revoked', async () => {
      const p = await project();
      const permit = (await issue(p)).json;
      const refused = await call('POST', `/v1/permits/${permit.permit_id}/revoke`, { key: p.clientKey, body: { reason: 'x' } });
      expect(refused.status).toBe(403);
      expect(refused.json.error.code).toBe('insufficient_scope');
      const res = await call('POST', `/v1/permits/${permit.permit_id}/revoke`, { key: p.adminKey, body: { reason: 'Leaked workflow', actor: 'carol' } });
      expect(res.status).toBe(200);
      expect(res.json).toMatchObject({ status: 'revoked', revocation: { revoked_by: 'carol', reason: 'Leaked workflow' }, reservation: { state: 'released' } });
      const twice = await call('POST', `/v1/permits/${permit.permit_id}/revoke`, { key: p.adminKey, body: { reason: 'again' } });
      expect(twice.status).toBe(409);
      expect(twice.json.error.code).toBe('permit_already_revoked');
      const tl = await call('GET', `/v1/permits/${permit.permit_id}/timeline`, { key: p.clientKey });
      expect(tl.json.events.map((e: any) => e.event_type)).toEqual(['permit.allowed', 'permit.expiry_scheduled', 'permit.revoked']);
      expect(tl.json.revocation).toMatchObject({ revoked_by: 'carol', reason: 'Leaked workflow' });
      // The same key replays the revoked permit rather than issuing a new one.
      const replay = await issue(p, { idempotency_key: permit.idempotency_key });
      expect(replay.json).toMatchObject({ permit_id: permit.permit_id, status: 'revoked' });
      expect((await call('POST', '/v1/permits/permit_missing/revoke', { key: p.adminKey, body: { reason: 'x' } })).status).toBe(404);
    });
  });
});
