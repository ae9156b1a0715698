/** Mistral error bodies: `{object: "error", message, type, param, code}` (401: `{message}`). */
import type { ProviderFailure } from '../types';
import { classifyHttpFailure, stringAt } from '../shared/errors';

export function mapMistralError(status: number, body: unknown, headers?: Record<string, string | string[] | undefined>): ProviderFailure {
  const message = stringAt(body, 'message') ?? stringAt(body, 'error.message') ?? stringAt(body, 'detail') ?? '';
  return classifyHttpFailure(status, body, message, headers);
}

export function mistralErrorBody(status: number, message: string): unknown {
  if (status === 401) return { message: 'Unauthorized', request_id: 'emulated' };
  const type = status === 429 ? 'rate_limited' : status >= 500 ? 'internal_server_error' : 'invalid_request_error';
  return { object: 'error', message, type, param: null, code: String(status) };
}
