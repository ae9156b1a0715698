/** OpenAI error bodies `{error: {message, type, param, code}}` → failure. Shared by deepseek. */
import type { ProviderFailure } from '../types';
import { classifyHttpFailure, stringAt } from '../shared/errors';


export function mapOpenAIError(status: number, body: unknown, headers?: Record<string, string | string[] | undefined>): ProviderFailure {
  const message = stringAt(body, 'error.message') ?? stringAt(body, 'message') ?? (typeof body === 'string' ? body.slice(0, 500) : '');
  return classifyHttpFailure(status, body, message, headers);
}
