/** Evidence attached to a permit: POST and GET /v1/permits/{id}/evidence (src/permits/evidence.ts). */
import { createHash } from 'node:crypto';
import { verifyEventChain } from '../../../src/db/repositories/event-chain-verification';
import { permitsSuite } from './helpers';

describe('permit-first API: evidence', () => {
  const suite = permitsSuite();
  const { call, project, issue } = suite;

  describe('evidence', () => {
    it('evidence: attach and list; the event chain still verifies', async () => {
      const p = await project();
      const permit = (await issue(p)).json;
      const sha = createHash('sha256').update('tool output').digest('hex');
      const add = await call('POST', `/v1/permits/${permit.permit_id}/evidence`, {
        key: p.clientKey,
        body: { type: 'tool_output', description: 'search results', content_sha256: sha, data: { hits: 3 } },
      });
      expect(add.status).toBe(201);
      expect(add.json).toMatchObject({ object: 'permit_evidence', id: expect.stringMatching(/^evd_/), permit_id: permit.permit_id, content_sha256: sha });
      expect((await call('POST', `/v1/permits/${permit.permit_id}/evidence`, { key: p.clientKey, body: { type: 'note' } })).status).toBe(400);
      const list = await call('GET', `/v1/permits/${permit.permit_id}/evidence`, { key: p.clientKey });
      expect(list.json.data.map((e: any) => e.id)).toEqual([add.json.id]);
      const b = await call('GET', `/v1/permits/${permit.permit_id}/bundle`, { key: p.clientKey });
      expect(b.json.evidence).toHaveLength(1);
      expect(b.json.events.map((e: any) => e.event_type)).toContain('permit.evidence_attached');
      expect((await verifyEventChain(suite.tg.db, p.project.id)).ok).toBe(true);
    });

    it('evidence URIs are http: or https: only (400 naming uri otherwise)', async () => {
      const p = await project();
      const permit = (await issue(p)).json;
      const attach = (uri: string) => call('POST', `/v1/permits/${permit.permit_id}/evidence`, { key: p.clientKey, body: { type: 'document', uri } });
      for (const uri of ['javascript:alert(document.cookie)', 'JavaScript://%0Aalert(1)', 'file:///etc/passwd', 'data:text/html,<script>alert(1)</script>', 'ftp://example.com/x']) {
        const res = await attach(uri);
        expect(res.status).toBe(400);
        expect(res.json.error).toMatchObject({ code: 'validation_error', details: { issues: [expect.objectContaining({ path: 'uri' })] } });
      }
      expect((await attach('https://example.com/report.pdf')).status).toBe(201);
      expect((await attach('http://intranet.example/ticket/1')).status).toBe(201);
      const list = await call('GET', `/v1/permits/${permit.permit_id}/evidence`, { key: p.clientKey });
      expect(list.json.data.map((e: any) => e.uri)).toEqual(['https://example.com/report.pdf', 'http://intranet.example/ticket/1']);
    });
  });
});
