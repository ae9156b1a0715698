/** Anthropic error bodies `{type: "error", error: {type, message}}` → failure (529 overloaded). */
import type { ProviderFailure } from '../types';
import { classifyHttpFailure, stringAt } from '../shared/errors';

export function mapAnthropicError(status: number, body: unknown, headers?: Record<string, string | string[] | undefined>): ProviderFailure {
  const message = stringAt(body, 'error.message') ?? stringAt(body, 'message') ?? '';
  const effective = stringAt(body, 'error.type') === 'overloaded_error' && status < 500 ? 529 : status;
  return { ...classifyHttpFailure(effective, body, message, headers), status };
}

const TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  529: 'overloaded_error',
};

export function anthropicErrorBody(status: number, message: string): unknown {
  return { type: 'error', error: { type: TYPES[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error'), message } };
}
