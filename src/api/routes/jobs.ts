import { z } from 'zod';
import { errors, parseOrThrow, zodIssues } from '../errors';
import { cursorPage, decodeCursor, encodeCursor } from '../cursor';
import { authOf, keyAuthOf } from '../middleware/auth';
import { projectRead, routeFamily } from '../route-table';
import { jobListSchema, jobSchema } from '../schemas/jobs';
import { JOB_STATUSES, listJobs } from '../../db/repositories/jobs';
import { planExecution } from '../../executions/routing';
import { ExecutionRequest, executionRequestSchema } from '../../executions/schema';
import { callerOf } from '../../executions/service';
import { cancelJob, readJob, submitJob, type JobServiceDeps } from '../../jobs/service';
import { jobView } from '../../jobs/view';
import { temporalServiceDeps } from '../deps';

/** `metadata`: a string map (at most 50 keys of 1–64 characters, values up to 512). */
export const metadataSchema = z
  .record(z.string().min(1).max(64), z.string().max(512))
  .refine((m) => Object.keys(m).length <= 50, { message: 'metadata takes at most 50 keys' });

/** The per-job opt-in to re-dispatch after a worker death (docs/decisions/jobs.md). */
export const retryOnInterruptSchema = z
  .boolean()
  .default(false)
  .describe(
    'When true, a dispatch interrupted by a worker death is dispatched again (within the job\'s attempts) instead of ending the job failed with dispatch_interrupted. ' +
      'The interrupted call may already have reached the provider, so the provider can receive and bill the request twice; the permit and its reservation stay the same. Default false: at most one provider call per job.',
  );

const LIST_LIMIT_DEFAULT = 20;
const LIST_LIMIT_MAX = 100;

export const listSchema = z
  .object({
    status: z.enum(JOB_STATUSES).optional(),
    operation: z.string().min(1).max(100).optional(),
    created_at_gte: z.iso.datetime({ offset: true }).optional(),
    created_at_lte: z.iso.datetime({ offset: true }).optional(),
    limit: z.coerce.number().int().min(1).max(LIST_LIMIT_MAX).default(LIST_LIMIT_DEFAULT),
    cursor: z.string().min(1).max(500).optional(),
  })
  .strict();

export const jobRoutes = routeFamily(
  'Jobs',
  (deps) => ({ svc: { ...temporalServiceDeps(deps), intentReservations: deps.intentReservations } satisfies JobServiceDeps }),
  [
    {
      method: 'post',
      path: '/v1/jobs',
      stability: 'Beta',
      since: 'v1.3',
      auth: 'key',
      summary: 'Submit an async job (execution request plus metadata)',
      body: z
        .looseObject({
          metadata: metadataSchema.optional(),
          retry_on_interrupt: retryOnInterruptSchema.optional(),
        })
        .describe('An execution request (see POST /v1/executions) with optional metadata and retry_on_interrupt'),
      status: 202,
      response: jobSchema,
      handler: async (ctx, { deps, svc }) => {
        const auth = keyAuthOf(ctx);
        const raw = (ctx.request.body ?? {}) as Record<string, unknown>;
        if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw errors.validation([{ path: '', message: 'The body must be a JSON object', code: 'invalid_type' }]);
        const { metadata: rawMetadata, retry_on_interrupt: rawRetry, ...rest } = raw;
        const issues = [];
        const meta = metadataSchema.safeParse(rawMetadata ?? {});
        if (!meta.success) issues.push(...zodIssues(meta.error, 'metadata'));
        const retry = retryOnInterruptSchema.safeParse(rawRetry);
        if (!retry.success) issues.push(...zodIssues(retry.error, 'retry_on_interrupt'));
        const parsed = executionRequestSchema.safeParse(rest);
        if (!parsed.success) issues.push(...zodIssues(parsed.error));
        else if (parsed.data.mode === 'stream') issues.push({ path: 'mode', message: 'Jobs run asynchronously; mode must be "sync" or omitted', code: 'custom' });
        if (issues.length > 0 || !parsed.success || !meta.success || !retry.success) throw errors.validation(issues);
        const body = parsed.data as ExecutionRequest;
        // The call headers as /v1/executions checks them; X-Svc-Workflow-Id joins the job's call to an intent.
        const { idempotencyKey: key, workflowId } = callerOf(auth, (name) => ctx.get(name));
        const reply = await submitJob(svc, { projectId: auth.projectId, keyId: auth.keyId, idempotencyKey: key, workflowId }, {
          // Bound to the Idempotency-Key only when set, so keys used before the option keep their hash.
          body: { ...body, metadata: meta.data, ...(retry.data ? { retry_on_interrupt: true } : {}) },
          metadata: meta.data,
          retryOnInterrupt: retry.data,
          ...planExecution(body, deps.pricing),
        });
        ctx.status = reply.status;
        for (const [k, v] of Object.entries(reply.headers)) ctx.set(k, v);
        ctx.body = reply.body;
      },
    },
    {
      method: 'get',
      path: '/v1/jobs',
      stability: 'Beta',
      auth: 'key',
      members: true,
      summary: 'List jobs',
      query: listSchema,
      response: jobListSchema,
      handler: async (ctx, { deps }) => {
        const auth = authOf(ctx);
        const q = parseOrThrow(listSchema, ctx.query, 'query');
        const rows = await listJobs(deps.db, auth.projectId, {
          status: q.status,
          operation: q.operation,
          createdAtGte: q.created_at_gte ? new Date(q.created_at_gte) : undefined,
          createdAtLte: q.created_at_lte ? new Date(q.created_at_lte) : undefined,
          beforeId: q.cursor ? decodeCursor(q.cursor, ['id'], (c) => c.id.startsWith('job_')).id : undefined,
          limit: q.limit + 1,
        });
        ctx.body = cursorPage(rows, q.limit, jobView, (last) => encodeCursor({ id: last.id }));
      },
    },
    {
      method: 'get',
      path: '/v1/jobs/:job_id',
      stability: 'Beta',
      since: 'v1.3',
      auth: 'key',
      members: true,
      summary: 'A job',
      response: jobSchema,
      handler: projectRead(({ svc }, projectId, { job_id }) => readJob(svc, projectId, job_id)),
    },
    {
      method: 'post',
      path: '/v1/jobs/:job_id/cancel',
      stability: 'Beta',
      auth: 'key',
      summary: 'Cancel a job (200 cancelled, 202 while the running attempt stops)',
      alsoStatus: [202],
      response: jobSchema,
      handler: async (ctx, { svc }) => {
        const r = await cancelJob(svc, authOf(ctx).projectId, ctx.params.job_id);
        ctx.status = r.status;
        ctx.body = r.body;
      },
    },
  ],
);
