/**
 * The provider layer's contract: what the execution path hands a provider adapter and what it gets
 * back. Provider modules (src/providers/<name>/) implement it; nothing outside src/providers knows
 * a native wire format.
 */
import type { ProviderId } from '../config';

export type { ProviderId } from '../config';

export const OPERATIONS = [
  'generate.text',
  'embed.text',
  'understand.image',
  'generate.image',
  'generate.audio',
  'transcribe.audio',
] as const;
export type Operation = (typeof OPERATIONS)[number];

/** The spec's operation matrix for POST /v1/executions. */
export const OPERATION_PROVIDERS: Record<Operation, readonly ProviderId[]> = {
  'generate.text': ['openai', 'anthropic', 'google', 'deepseek', 'mistral'],
  'embed.text': ['openai', 'google', 'mistral'],
  'understand.image': ['openai', 'google', 'mistral'],
  'generate.image': ['openai'],
  'generate.audio': ['openai'],
  'transcribe.audio': ['openai', 'google'],
};

export function supportsOperation(provider: ProviderId, operation: Operation): boolean {
  return OPERATION_PROVIDERS[operation].includes(provider);
}

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface InputItem {
  type: 'text' | 'image' | 'audio';
  role?: 'user';
  text?: string;
  asset?: { source: 'url'; url: string; mime_type?: string };
}

/** A provider-neutral request for one dispatch to one concrete target. */
export interface NormalizedRequest {
  operation: Operation;
  provider: ProviderId;
  model: string;
  messages?: ChatMessage[];
  inputs?: InputItem[];
  parameters?: { max_output_tokens?: number; temperature?: number; top_p?: number };
  /** `provider_options[provider]` of the request; merged under the top-level fields, never over them. */
  providerOptions?: Record<string, unknown>;
  stream: boolean;
}

export interface UsageMetric {
  meter: string; // e.g. input_tokens, output_tokens, cached_input_tokens, images, audio_seconds, characters
  quantity: number;
  unit: string; // tokens, images, seconds, characters
}

export interface Usage {
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
  cached_input_tokens?: number;
  reasoning_tokens?: number;
  /** Non-token meters (images, seconds of audio, characters of speech) for pricing. */
  images?: number;
  audio_seconds?: number;
  characters?: number;
  metrics: UsageMetric[];
  /** True when counts are estimated (e.g. a stream that ended without provider usage). */
  estimated: boolean;
}

export interface ContentBlock {
  type: 'text';
  role: 'assistant';
  text: string;
}

export interface ExecutionOutput {
  content: ContentBlock[];
  embeddings?: number[][];
}

/** Asset record for asset-producing operations (generate.image, generate.audio). */
export interface OutputAsset {
  type: 'image' | 'audio';
  mime_type: string;
  /** Where the asset can be fetched, when the provider returned a URL. */
  url: string | null;
  /** Inline base64 data, when the provider returned bytes. */
  data_b64: string | null;
  bytes: number | null;
}

export interface ProviderResult {
  output: ExecutionOutput;
  output_assets: OutputAsset[];
  usage: Usage;
  /** The model id the provider reports having used, when it reports one. */
  provider_model?: string;
  finish_reason?: string | null;
  /** The names of the tool calls the answer carried, in order (never their arguments); absent when none. */
  tool_calls?: string[];
}

/** A provider-neutral failure. `native` keeps the provider's own error body for proxy routes. */
export interface ProviderFailure {
  kind: 'http_error' | 'rate_limited' | 'overloaded' | 'timeout' | 'network' | 'malformed_response' | 'stream_broken' | 'aborted';
  status: number | null;
  retryable: boolean;
  message: string;
  retry_after_seconds?: number;
  native?: unknown;
}

export class ProviderError extends Error {
  constructor(
    readonly failure: ProviderFailure,
    /** Usage known at the time of failure (e.g. input tokens of a stream that broke midway). */
    readonly partialUsage?: Usage,
  ) {
    super(failure.message);
    this.name = 'ProviderError';
  }
}

export interface DispatchOptions {
  signal?: AbortSignal;
  /** Called for each text delta of a streamed response. */
  onDelta?: (text: string) => void;
  /** Per-call credentials (e.g. a project's own provider key); default: the configured ones. */
  credentials?: { apiKey?: string; baseUrl?: string };
  /** The calling project: its own provider key is used when it has one (src/management/provider-credentials.ts). */
  projectId?: string;
}

/** The provider layer as the execution path sees it (src/providers/index.ts builds one). */
export interface ProviderGateway {
  /** Sync or stream (per `req.stream`); resolves with final usage, rejects with ProviderError. */
  dispatch(req: NormalizedRequest, opts?: DispatchOptions): Promise<ProviderResult>;
}
