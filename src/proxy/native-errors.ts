/**
 * Errors that Tollgate itself raises on the proxy routes (authentication, governance denials,
 * idempotency conflicts, unsupported paths, upstream unreachable), rendered in the provider's own
 * error shape so the provider's SDK turns them into its own API error class. The Tollgate code
 * (a permit reason code such as `policy.rule_denied`, or `invalid_api_key`, `idempotency_conflict`)
 * is carried in the field the provider uses for a machine-readable code, and always in the message.
 */
import type { ProviderId } from '../config';

const ANTHROPIC_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  409: 'invalid_request_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  502: 'api_error',
  503: 'overloaded_error',
  504: 'api_error',
};

const GOOGLE_STATUS: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  409: 'ABORTED',
  413: 'INVALID_ARGUMENT',
  429: 'RESOURCE_EXHAUSTED',
  500: 'INTERNAL',
  502: 'UNAVAILABLE',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
};

function openAIType(status: number): string {
  if (status === 401) return 'invalid_request_error';
  if (status === 403) return 'permission_denied';
  if (status === 429) return 'rate_limit_exceeded';
  if (status === 409) return 'idempotency_error';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

/** A provider-native error body for a Tollgate-raised failure. */
export function nativeErrorBody(provider: ProviderId, error: { status: number; code: string; message: string; extra?: Record<string, unknown> }): unknown {
  const { status, code, message, extra = {} } = error;
  const text = message.includes(code) ? message : `${message} (${code})`;
  switch (provider) {
    case 'openai':
    case 'deepseek':
      return { error: { message: text, type: openAIType(status), param: null, code, ...extra } };
    case 'mistral':
      return { object: 'error', message: text, type: openAIType(status), param: null, code, ...extra };
    case 'anthropic':
      return { type: 'error', error: { type: ANTHROPIC_TYPES[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error'), message: text } };
    case 'google':
      return {
        error: {
          code: status,
          message: text,
          status: GOOGLE_STATUS[status] ?? (status >= 500 ? 'INTERNAL' : 'FAILED_PRECONDITION'),
          details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: code, domain: 'tollgate', metadata: Object.fromEntries(Object.entries(extra).map(([k, v]) => [k, String(v)])) }],
        },
      };
  }
}

/** A Tollgate-raised failure on a proxy route; rendered with nativeErrorBody by the route. */
export class ProxyError extends Error {
  /** Response headers the error carries (`www-authenticate`, `retry-after`). */
  readonly headers: Record<string, string>;
  /** Members added to the native error body. */
  readonly extra: Record<string, unknown>;

  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    more: { headers?: Record<string, string>; extra?: Record<string, unknown> } = {},
  ) {
    super(message);
    this.name = 'ProxyError';
    this.headers = more.headers ?? {};
    this.extra = more.extra ?? {};
  }
}
