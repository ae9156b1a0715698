/**
 * The OpenTelemetry GenAI semantic conventions as Tollgate emits them, in one place for every
 * governed surface (the executions path in activities/governed-call.ts, the proxies in
 * src/proxy/service.ts, the governed call in src/pipeline/governed-call.ts):
 *
 * - the mapping of Tollgate's operations and provider ids to `gen_ai.operation.name` and
 *   `gen_ai.provider.name` (`gen_ai.system` is the deprecated name and is not emitted);
 * - the attributes of a call and of its outcome (models, token usage, `error.type`);
 * - one span per provider attempt (kind CLIENT, named `{gen_ai.operation.name} {gen_ai.request.model}`)
 *   and the two GenAI client metrics it observes, `gen_ai.client.operation.duration` and
 *   `gen_ai.client.token.usage`, as Prometheus histograms on /metrics.
 *
 * No prompt or completion text is ever an attribute or a label.
 */
import { SpanKind, SpanStatusCode, type Attributes, type Span } from '@opentelemetry/api';
import { Histogram, type Registry } from 'prom-client';
import type { ProviderId } from '../config';
import type { Operation, ProviderFailure, Usage } from '../providers/types';
import { inSpan } from './tracing';

export const GEN_AI = {
  operation: 'gen_ai.operation.name',
  provider: 'gen_ai.provider.name',
  requestModel: 'gen_ai.request.model',
  responseModel: 'gen_ai.response.model',
  inputTokens: 'gen_ai.usage.input_tokens',
  outputTokens: 'gen_ai.usage.output_tokens',
  errorType: 'error.type',
} as const;

/** The convention's well-known provider names (`gcp.gemini` is the Gemini API, `mistral_ai` Mistral). */
const PROVIDER_NAMES: Record<ProviderId, string> = {
  openai: 'openai',
  anthropic: 'anthropic',
  google: 'gcp.gemini',
  deepseek: 'deepseek',
  mistral: 'mistral_ai',
};

export function genAiProviderName(provider: ProviderId): string {
  return PROVIDER_NAMES[provider] ?? provider;
}

/**
 * `gen_ai.operation.name`: the convention's well-known value where one fits (text generation and
 * image understanding are a chat call, except on the Gemini API whose call is generateContent;
 * embeddings), else Tollgate's own operation name with `_` for `.` (the convention's values are
 * snake_case verbs: `generate_image`, `generate_audio`, `transcribe_audio`).
 */
export function genAiOperationName(operation: Operation, provider: ProviderId): string {
  switch (operation) {
    case 'generate.text':
    case 'understand.image':
      return provider === 'google' ? 'generate_content' : 'chat';
    case 'embed.text':
      return 'embeddings';
    default:
      return operation.replace(/\./g, '_');
  }
}

/** What a call is, before it runs: operation, provider and requested model. */
export interface GenAiCall {
  operation: Operation;
  provider: ProviderId;
  model: string;
}

export function genAiCallAttributes(call: GenAiCall): Attributes {
  return {
    [GEN_AI.operation]: genAiOperationName(call.operation, call.provider),
    [GEN_AI.provider]: genAiProviderName(call.provider),
    [GEN_AI.requestModel]: call.model,
  };
}

/**
 * `error.type` of a provider failure: low cardinality, the HTTP status for a plain HTTP error (as the
 * HTTP conventions do), otherwise the failure kind (`timeout`, `rate_limited`, `stream_broken`, ...).
 */
export function genAiErrorType(failure: Pick<ProviderFailure, 'kind' | 'status'>): string {
  return failure.kind === 'http_error' && failure.status ? String(failure.status) : failure.kind;
}

/** How a call or attempt ended, as far as the conventions look at it. */
export interface GenAiOutcome {
  usage?: Pick<Usage, 'input_tokens' | 'output_tokens'> | null;
  /** The model the provider reports having answered with, when it reports one. */
  responseModel?: string;
  failure?: Pick<ProviderFailure, 'kind' | 'status'> | null;
  /** `error.type` for a failure that is not a provider's (an exception's class name). */
  errorType?: string;
}

function errorTypeOf(o: GenAiOutcome): string | undefined {
  return o.errorType ?? (o.failure ? genAiErrorType(o.failure) : undefined);
}

export function genAiOutcomeAttributes(o: GenAiOutcome): Attributes {
  const a: Attributes = {};
  if (o.responseModel) a[GEN_AI.responseModel] = o.responseModel;
  if (o.usage) {
    a[GEN_AI.inputTokens] = o.usage.input_tokens;
    a[GEN_AI.outputTokens] = o.usage.output_tokens;
  }
  const errorType = errorTypeOf(o);
  if (errorType) a[GEN_AI.errorType] = errorType;
  return a;
}

/** Sets the outcome's attributes on a span; a failure also sets the span's status to error. */
export function setGenAiOutcome(span: Span, o: GenAiOutcome): void {
  span.setAttributes(genAiOutcomeAttributes(o));
  if (errorTypeOf(o)) span.setStatus({ code: SpanStatusCode.ERROR });
}

type MetricLabel = 'gen_ai_operation_name' | 'gen_ai_provider_name' | 'gen_ai_request_model' | 'gen_ai_response_model' | 'gen_ai_token_type' | 'error_type';

/** The GenAI client metrics, observed once per provider attempt. */
export interface GenAiMetrics {
  observe(call: GenAiCall, seconds: number, outcome: GenAiOutcome): void;
}

/**
 * The two GenAI client metrics as Prometheus histograms, with the conventions' bucket boundaries.
 * Names and labels are what the OpenTelemetry Prometheus exporter makes of them (dots become `_`,
 * the unit `s` becomes the `_seconds` suffix; `{token}` is an annotation, no suffix).
 */
export function createGenAiMetrics(registry: Registry): GenAiMetrics {
  const labelNames: MetricLabel[] = ['gen_ai_operation_name', 'gen_ai_provider_name', 'gen_ai_request_model', 'gen_ai_response_model', 'gen_ai_token_type', 'error_type'];
  /** A histogram with every label but `without`, registered in `registry`. */
  const histogram = (name: string, help: string, without: MetricLabel, buckets: number[]) =>
    new Histogram<MetricLabel>({ name, help, labelNames: labelNames.filter((l) => l !== without), buckets, registers: [registry] });
  const duration = histogram(
    'gen_ai_client_operation_duration_seconds',
    'GenAI operation duration: one provider attempt, from request to the last byte (gen_ai.client.operation.duration)',
    'gen_ai_token_type',
    [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92],
  );
  const tokens = histogram(
    'gen_ai_client_token_usage',
    'Input and output tokens of a provider attempt (gen_ai.client.token.usage)',
    'error_type',
    [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864],
  );
  return {
    observe(call, seconds, outcome) {
      const labels: Partial<Record<MetricLabel, string>> = {
        gen_ai_operation_name: genAiOperationName(call.operation, call.provider),
        gen_ai_provider_name: genAiProviderName(call.provider),
        gen_ai_request_model: call.model,
      };
      if (outcome.responseModel) labels.gen_ai_response_model = outcome.responseModel;
      const errorType = errorTypeOf(outcome);
      duration.observe(errorType ? { ...labels, error_type: errorType } : labels, seconds);
      // Token counts only when the provider (or the estimate of a cut-short stream) gave some.
      if (outcome.usage) {
        tokens.observe({ ...labels, gen_ai_token_type: 'input' }, outcome.usage.input_tokens);
        tokens.observe({ ...labels, gen_ai_token_type: 'output' }, outcome.usage.output_tokens);
      }
    },
  };
}

/**
 * One provider attempt: a CLIENT span named `{gen_ai.operation.name} {gen_ai.request.model}` (the
 * active span while `fn` runs, so the `traceparent` sent upstream is this span's), its outcome's
 * attributes, and one observation of the client metrics. `outcomeOf` reads the attempt's result;
 * an exception counts as a failure of its class name and is rethrown.
 */
export function providerAttempt<T>(metrics: GenAiMetrics | undefined, call: GenAiCall & { attempt: number }, fn: (span: Span) => Promise<T>, outcomeOf: (result: T) => GenAiOutcome): Promise<T> {
  const attributes: Attributes = { ...genAiCallAttributes(call), 'tollgate.attempt': call.attempt };
  const name = `${genAiOperationName(call.operation, call.provider)} ${call.model}`;
  return inSpan(
    name,
    attributes,
    async (span) => {
      const started = process.hrtime.bigint();
      const seconds = () => Number(process.hrtime.bigint() - started) / 1e9;
      let result: T;
      try {
        result = await fn(span);
      } catch (err) {
        metrics?.observe(call, seconds(), { errorType: err instanceof Error ? err.name : '_OTHER' });
        throw err;
      }
      const outcome = outcomeOf(result);
      metrics?.observe(call, seconds(), outcome);
      setGenAiOutcome(span, outcome);
      return result;
    },
    { kind: SpanKind.CLIENT },
  );
}
