/** Gemini error bodies `{error: {code, message, status}}` → failure. */
import type { ProviderFailure } from '../types';
import { classifyHttpFailure, stringAt } from '../shared/errors';

export function mapGoogleError(status: number, body: unknown, headers?: Record<string, string | string[] | undefined>): ProviderFailure {
  const b = Array.isArray(body) ? body[0] : body; // some Google front ends wrap the error in an array
  return classifyHttpFailure(status, body, stringAt(b, 'error.message') ?? '', headers);
}

const STATUS: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  429: 'RESOURCE_EXHAUSTED',
  500: 'INTERNAL',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
};

export function googleErrorBody(status: number, message: string): unknown {
  return { error: { code: status, message, status: STATUS[status] ?? (status >= 500 ? 'INTERNAL' : 'FAILED_PRECONDITION') } };
}
