/**
 * What the permit-first API's tests share: a Tollgate for the file, a project per test, and the
 * requests they make (issue a permit, set the policy, declare an intent).
 */
import { createHash } from 'node:crypto';
import { startTestTollgate, createTestProject, http, TestProject } from '../../support/tollgate';

type TestTollgate = Awaited<ReturnType<typeof startTestTollgate>>;
type Call = ReturnType<typeof http>;

/** Verification material of a completed usage report. */
export const verification = { provider_request_id: 'chatcmpl-123', response_sha256: createHash('sha256').update('{"id":"chatcmpl-123"}').digest('hex') };

/** Starts a Tollgate for the describe block it is called in (closed after it); its helpers call that Tollgate. */
export function permitsSuite() {
  let tg: TestTollgate;
  let client: Call;

  beforeAll(async () => {
    tg = await startTestTollgate();
    client = http(tg.url!);
  });
  afterAll(async () => tg?.close());

  const call: Call = (...args) => client(...args);
  const project = () => createTestProject(tg.db);
  const permitBody = (p: TestProject, extra: Record<string, unknown> = {}) => ({
    project_id: p.project.id,
    operation: 'generate.text',
    provider: 'openai',
    model: 'gpt-4o-mini',
    estimated_input_tokens: 1000,
    estimated_output_tokens: 1000,
    ...extra,
  });
  const setPolicy = async (p: TestProject, patch: unknown) => {
    const res = await call('PATCH', `/v1/projects/${p.project.id}/policy`, { key: p.adminKey, body: patch });
    expect(res.status).toBe(200);
    return res.json;
  };
  const issue = (p: TestProject, extra: Record<string, unknown> = {}) => call('POST', '/v1/permits', { key: p.clientKey, body: permitBody(p, extra) });
  const declare = async (p: TestProject, workflowId: string, intent: Record<string, unknown> = { expected_calls: 10 }) =>
    expect((await call('POST', '/v1/workflows', { key: p.clientKey, body: { workflow_id: workflowId, intent } })).status).toBe(201);

  return {
    get tg() {
      return tg;
    },
    call,
    project,
    permitBody,
    setPolicy,
    issue,
    declare,
  };
}
