/** Usage closeout: POST and GET /v1/permits/{id}/usage (src/permits/usage.ts). */
import { permitsSuite, verification } from './helpers';

describe('permit-first API: usage closeout', () => {
  const suite = permitsSuite();
  const { call, project, setPolicy, issue } = suite;

  describe('usage closeout', () => {
    it('settles the reservation; same key and values replays; different values 409; a second key 409', async () => {
      const p = await project();
      const permit = await issue(p);
      const id = permit.json.permit_id;
      const report = { usage_idempotency_key: 'close-1', status: 'completed', input_tokens: 900, output_tokens: 800, billed_cost_usd_micros: 615, verification };
      const res = await call('POST', `/v1/permits/${id}/usage`, { key: p.clientKey, body: report });
      expect(res.status).toBe(200);
      expect(res.json).toMatchObject({ object: 'permit_usage_report', permit_id: id, status: 'completed', billed_cost_usd_micros: 615, reservation: { state: 'settled' } });
      const replay = await call('POST', `/v1/permits/${id}/usage`, { key: p.clientKey, body: report });
      expect(replay.status).toBe(200);
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
      expect(replay.headers.get('x-svc-idempotent-replay')).toBe('true');
      expect(replay.json).toEqual(res.json);
      const conflict = await call('POST', `/v1/permits/${id}/usage`, { key: p.clientKey, body: { ...report, billed_cost_usd_micros: 616 } });
      expect(conflict.status).toBe(409);
      expect(conflict.json.error).toMatchObject({ code: 'idempotency_conflict', details: { idempotency_key: 'close-1' } });
      const second = await call('POST', `/v1/permits/${id}/usage`, { key: p.clientKey, body: { ...report, usage_idempotency_key: 'close-2' } });
      expect(second.status).toBe(409);
      expect(second.json.error.code).toBe('usage_already_recorded');
      const rollup = await call('GET', `/v1/permits/${id}/usage`, { key: p.clientKey });
      expect(rollup.json).toMatchObject({
        object: 'permit_usage', permit_id: id, status: 'used',
        estimate: { cost_usd_micros: 750 }, report: { billed_cost_usd_micros: 615, usage_idempotency_key: 'close-1' }, variance_usd_micros: -135,
        lineage_totals: { permits: 1, reports: 1, billed_cost_usd_micros: 615 },
      });
      const got = await call('GET', `/v1/permits/${id}`, { key: p.clientKey });
      expect(got.json.usage).toEqual({ input_tokens: 900, output_tokens: 800, cost_usd_micros: 615 });
      const bundle = await call('GET', `/v1/permits/${id}/bundle`, { key: p.clientKey });
      expect(bundle.json.events.map((e: any) => e.event_type)).toContain('usage.recorded');
    });

    it('validates completed reports: verification material and a positive billed cost', async () => {
      const p = await project();
      const id = (await issue(p)).json.permit_id;
      const post = (body: unknown) => call('POST', `/v1/permits/${id}/usage`, { key: p.clientKey, body });
      const noVerification = await post({ usage_idempotency_key: 'a', status: 'completed', billed_cost_usd_micros: 10 });
      expect(noVerification.status).toBe(400);
      expect(noVerification.json.error.details.issues.map((i: any) => i.path)).toContain('verification');
      const zeroCost = await post({ usage_idempotency_key: 'a', status: 'completed', billed_cost_usd_micros: 0, verification });
      expect(zeroCost.status).toBe(400);
      expect(zeroCost.json.error.details.issues.map((i: any) => i.path)).toContain('billed_cost_usd_micros');
      const idOnly = await post({ usage_idempotency_key: 'a', status: 'completed', billed_cost_usd_micros: 10, verification: { provider_request_id: 'x' } });
      expect(idOnly.status).toBe(400);
      const badHash = await post({ usage_idempotency_key: 'a', status: 'completed', billed_cost_usd_micros: 10, verification: { provider_request_id: 'x', response_sha256: 'nope' } });
      expect(badHash.status).toBe(400);
      const withUsageBlock = await post({
        usage_idempotency_key: 'a', status: 'completed', billed_cost_usd_micros: 10, input_tokens: 5, output_tokens: 5,
        verification: { provider_request_id: 'x', provider_usage: { prompt_tokens: 5, completion_tokens: 5 } },
      });
      expect(withUsageBlock.status).toBe(200);
    });

    it('a failed report without cost releases the reservation; deny permits have nothing to close', async () => {
      const p = await project();
      const id = (await issue(p)).json.permit_id;
      const failed = await call('POST', `/v1/permits/${id}/usage`, { key: p.clientKey, body: { usage_idempotency_key: 'f', status: 'failed', error: { code: 'upstream_error' } } });
      expect(failed.status).toBe(200);
      expect(failed.json.reservation.state).toBe('released');
      await setPolicy(p, { deny_rules: [{ id: 'all', match: {} }] });
      const denied = (await issue(p)).json.permit_id;
      const res = await call('POST', `/v1/permits/${denied}/usage`, { key: p.clientKey, body: { usage_idempotency_key: 'f', status: 'failed' } });
      expect(res.status).toBe(409);
      expect(res.json.error.code).toBe('permit_not_allowed');
    });
  });
});
