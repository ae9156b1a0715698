/**
 * Request schemas of the execution routes (POST /v1/executions, POST /v1/execute). zod is the single
 * source of validation; every rule of the spec's execution request is here so a bad request is a
 * 400 `validation_error` naming the offending field before anything is started or dispatched.
 */
import { z } from 'zod';
import { PROVIDER_IDS, ProviderId } from '../config';
import { OPERATIONS, Operation } from '../providers/types';

/** Operations the spec lists as unsupported on POST /v1/executions (a clearer message than "unknown"). */
/** Neither execution route takes `project_id` (the key decides) nor a top-level `context`. */
function rejectProjectAndContext(body: { project_id?: unknown; context?: unknown }, ctx: z.RefinementCtx): void {
  if (body.project_id !== undefined) {
    ctx.addIssue({ code: 'custom', path: ['project_id'], message: 'project_id is not accepted on this route; the project comes from the API key' });
  }
  if (body.context !== undefined) {
    ctx.addIssue({ code: 'custom', path: ['context'], message: 'There is no top-level context field on this route' });
  }
}

export const UNSUPPORTED_OPERATIONS = [
  'edit.image',
  'generate.video',
  'understand.video',
  'run.batch',
  'run.async',
  'realtime.session',
] as const;

/** The fallback subset of the spec: explicit, non-stream, openai/anthropic text generation. */
export const FALLBACK_PROVIDERS: readonly ProviderId[] = ['openai', 'anthropic'];

const providerId = z.enum(PROVIDER_IDS);

const messageSchema = z
  .object({
    role: z.enum(['system', 'user', 'assistant']),
    content: z.string(),
  })
  .strict();

const assetSchema = z
  .object({
    source: z.literal('url'),
    url: z.string().url(),
    mime_type: z.string().min(1).max(200).optional(),
  })
  .strict();

const inputItemSchema = z
  .object({
    type: z.enum(['text', 'image', 'audio']),
    role: z.literal('user').optional(),
    text: z.string().optional(),
    asset: assetSchema.optional(),
  })
  .strict()
  .superRefine((item, ctx) => {
    if (item.type === 'text') {
      if (item.text === undefined) ctx.addIssue({ code: 'custom', path: ['text'], message: 'A text input needs "text"' });
      if (item.asset !== undefined) ctx.addIssue({ code: 'custom', path: ['asset'], message: 'A text input takes no "asset"' });
    } else {
      if (item.asset === undefined) ctx.addIssue({ code: 'custom', path: ['asset'], message: `An ${item.type} input needs "asset"` });
      if (item.text !== undefined) ctx.addIssue({ code: 'custom', path: ['text'], message: `An ${item.type} input takes no "text"` });
    }
  });

const targetSchema = z.object({ provider: providerId, model: z.string().min(1).max(200) }).strict();

const routingSchema = z
  .object({
    provider: providerId.optional(),
    model: z.string().min(1).max(200).optional(),
    allow_cross_provider_fallback: z.boolean().optional(),
    fallback_chain: z.array(targetSchema).max(4).optional(),
  })
  .strict();

const parametersSchema = z
  .object({
    max_output_tokens: z.number().int().min(1).max(1_000_000).optional(),
    temperature: z.number().min(0).max(2).optional(),
    top_p: z.number().min(0).max(1).optional(),
  })
  .strict();

const providerOptionsSchema = z.record(z.string(), z.unknown()).superRefine((opts, ctx) => {
  for (const [key, value] of Object.entries(opts)) {
    if (!(PROVIDER_IDS as readonly string[]).includes(key)) {
      ctx.addIssue({ code: 'custom', path: [key], message: `Keys of provider_options must be provider identifiers (${PROVIDER_IDS.join(', ')})` });
    } else if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      ctx.addIssue({ code: 'custom', path: [key], message: 'Each provider_options value must be an object' });
    }
  }
});

const operationSchema = z.string().superRefine((op, ctx) => {
  if ((OPERATIONS as readonly string[]).includes(op)) return;
  if ((UNSUPPORTED_OPERATIONS as readonly string[]).includes(op)) {
    ctx.addIssue({ code: 'custom', message: `Operation "${op}" is not supported on this route` });
  } else {
    ctx.addIssue({ code: 'custom', message: `Unknown operation; use one of ${OPERATIONS.join(', ')}` });
  }
});

export const executionRequestSchema = z
  .object({
    operation: operationSchema,
    mode: z.enum(['sync', 'stream']).optional(),
    messages: z.array(messageSchema).min(1).max(1000).optional(),
    inputs: z.array(inputItemSchema).min(1).max(1000).optional(),
    routing: routingSchema.optional(),
    parameters: parametersSchema.optional(),
    provider_options: providerOptionsSchema.optional(),
    // Named so their rejection carries a precise message instead of a generic "unrecognized key".
    project_id: z.unknown().optional(),
    context: z.unknown().optional(),
  })
  .strict()
  .superRefine((body, ctx) => {
    rejectProjectAndContext(body, ctx);
    const hasMessages = body.messages !== undefined;
    const hasInputs = body.inputs !== undefined;
    if (hasMessages === hasInputs) {
      ctx.addIssue({
        code: 'custom',
        path: [],
        message: hasMessages ? 'Send either messages or inputs, not both' : 'Send exactly one of messages or inputs',
      });
    }
    const op = body.operation as Operation;
    if (!(OPERATIONS as readonly string[]).includes(op)) return;
    const inputs = body.inputs ?? [];
    const has = (t: string) => inputs.some((i) => i.type === t);
    if (op === 'transcribe.audio') {
      if (hasMessages || !has('audio')) ctx.addIssue({ code: 'custom', path: ['inputs'], message: 'transcribe.audio requires inputs with at least one item of type audio' });
      if (has('image')) ctx.addIssue({ code: 'custom', path: ['inputs'], message: 'transcribe.audio takes no image inputs' });
    } else if (op === 'understand.image') {
      if (hasMessages || !has('image')) ctx.addIssue({ code: 'custom', path: ['inputs'], message: 'understand.image requires inputs including at least one item of type image' });
      if (has('audio')) ctx.addIssue({ code: 'custom', path: ['inputs'], message: 'understand.image takes no audio inputs' });
    } else if (has('image') || has('audio')) {
      ctx.addIssue({
        code: 'custom',
        path: ['inputs'],
        message: `${op} takes a text prompt only (messages or text inputs)`,
      });
    }
    const routing = body.routing;
    const stream = body.mode === 'stream';
    if (stream && op !== 'generate.text') {
      ctx.addIssue({ code: 'custom', path: ['mode'], message: 'Streaming is available for generate.text only' });
    }
    if (routing) {
      const allow = routing.allow_cross_provider_fallback === true;
      const chain = routing.fallback_chain;
      if (allow && (!chain || chain.length === 0)) {
        ctx.addIssue({ code: 'custom', path: ['routing', 'fallback_chain'], message: 'allow_cross_provider_fallback needs a concrete, non-empty fallback_chain' });
      }
      if (chain && chain.length > 0 && !allow) {
        ctx.addIssue({ code: 'custom', path: ['routing', 'allow_cross_provider_fallback'], message: 'fallback_chain is only used with allow_cross_provider_fallback: true' });
      }
      if (allow && chain && chain.length > 0) {
        if (op !== 'generate.text') ctx.addIssue({ code: 'custom', path: ['routing', 'fallback_chain'], message: 'Cross-provider fallback is limited to generate.text' });
        if (stream) ctx.addIssue({ code: 'custom', path: ['routing', 'fallback_chain'], message: 'Cross-provider fallback is not available for streams' });
        chain.forEach((t, i) => {
          if (!FALLBACK_PROVIDERS.includes(t.provider)) {
            ctx.addIssue({ code: 'custom', path: ['routing', 'fallback_chain', i, 'provider'], message: `Fallback is limited to ${FALLBACK_PROVIDERS.join(' and ')}` });
          }
        });
      }
    }
  });

export type ExecutionRequest = Omit<z.infer<typeof executionRequestSchema>, 'operation' | 'project_id' | 'context'> & {
  operation: Operation;
};

/** POST /v1/execute: provider-shaped input. */
export const executeRequestSchema = z
  .object({
    provider: providerId.optional(),
    model: z.string().min(1).max(200),
    input: z.record(z.string(), z.unknown()),
    project_id: z.unknown().optional(),
    context: z.unknown().optional(),
  })
  .strict()
  .superRefine((body, ctx) => {
    rejectProjectAndContext(body, ctx);
    if (body.input.stream === true) {
      ctx.addIssue({ code: 'custom', path: ['input', 'stream'], message: 'POST /v1/execute is sync only; use POST /v1/executions with mode "stream"' });
    }
  });

export type ExecuteRequest = z.infer<typeof executeRequestSchema>;

/** X-Svc-Workflow-Id: the spec's workflow_id pattern. */
export const WORKFLOW_ID_PATTERN = /^[A-Za-z0-9_-]{1,255}$/;
