/**
 * The typed SDK (sdk/src) against a real Tollgate: permits, executions, timelines and workflow
 * intents through the generated types; every response is also checked against the document.
 */
import { createTollgateClient, type TollgateClient } from '../../../sdk/src';
import { assertDocumentedResponse } from '../../support/openapi-responses';
import { startHarness, say, type Harness } from '../executions/helpers';
import type { TestProject } from '../../support/tollgate';

describe('@tollgate/sdk', () => {
  let h: Harness;
  let p: TestProject;
  let tg: TollgateClient;
  beforeAll(async () => {
    h = await startHarness();
    p = await h.project();
    tg = createTollgateClient({ baseUrl: h.tg.url!, apiKey: p.clientKey });
    tg.use({
      async onResponse({ request, response }) {
        const text = await response.clone().text();
        const type = response.headers.get('content-type');
        assertDocumentedResponse(request.method, request.url, response.status, type, type?.includes('json') && text ? JSON.parse(text) : undefined);
      },
    });
  });
  afterAll(async () => h.close());

  it('creates a permit and reads it and its timeline', async () => {
    const created = await tg.POST('/v1/permits', {
      body: { project_id: p.project.id, operation: 'generate.text', provider: 'openai', model: 'gpt-4o-mini', estimated_input_tokens: 100, estimated_output_tokens: 100 },
    });
    expect(created.response.status).toBe(200);
    const permit = created.data as { permit_id: string; decision: string };
    expect(permit.decision).toBe('allow');
    const read = await tg.GET('/v1/permits/{permit_id}', { params: { path: { permit_id: permit.permit_id } } });
    expect((read.data as { permit_id: string }).permit_id).toBe(permit.permit_id);
    const timeline = await tg.GET('/v1/permits/{permit_id}/timeline', { params: { path: { permit_id: permit.permit_id } } });
    expect(timeline.response.status).toBe(200);
    expect((timeline.data as { permit_id: string }).permit_id).toBe(permit.permit_id);
  });

  it('runs an execution and reads its request timeline', async () => {
    const run = await tg.POST('/v1/executions', { body: { operation: 'generate.text', messages: say('hello from the SDK') } as never });
    expect(run.response.status).toBe(200);
    expect(run.data?.object).toBe('execution');
    expect(run.data?.status).toBe('completed');
    const requestId = run.data!.id;
    const again = await tg.GET('/v1/executions/{request_id}', { params: { path: { request_id: requestId } } });
    expect(again.data?.id).toBe(requestId);
    const timeline = await tg.GET('/v1/requests/{request_id}/timeline', { params: { path: { request_id: requestId } } });
    expect(timeline.response.status).toBe(200);
    expect((timeline.data as { events: { event_type: string }[] }).events.length).toBeGreaterThan(0);
  });

  it('declares and completes an intent', async () => {
    const declared = await tg.POST('/v1/workflows', { body: { workflow_id: 'sdk-run-1', intent: { expected_calls: 1, max_calls: 2 } } });
    expect(declared.response.status).toBe(201);
    const completed = await tg.POST('/v1/workflows/{workflow_id}/complete', { params: { path: { workflow_id: 'sdk-run-1' } }, body: {} });
    expect(completed.response.status).toBe(200);
    expect((completed.data as { status: string }).status).toBe('completed');
  });

  it('returns failures in the error shape', async () => {
    const missing = await tg.GET('/v1/permits/{permit_id}', { params: { path: { permit_id: 'pmt_does_not_exist' } } });
    expect(missing.response.status).toBe(404);
    expect(missing.error?.error.code).toEqual(expect.any(String));
  });
});
