/**
 * What a permit's in-flight marker (`permits.closing`) keeps so that reconciliation can close a call whose process died: the
 * execution input without its request body (prompts are not copied), the pre-dispatch input-token
 * estimate, and what to do with the call's Idempotency-Key.
 */
import type { DispatchStart } from '../executions/lifecycle';
import type { ExecutionInput } from '../executions/types';

export interface Closing {
  input: Omit<ExecutionInput, 'request'> & { request: Pick<ExecutionInput['request'], 'operation'> };
  estimated_input_tokens: number;
  idempotency: { scope: string; key: string; onInterrupted: 'store_envelope' | 'mark_completed' | 'release' } | null;
  /** When and how the call was dispatched: its in-flight timeline, and its record's if reconciliation closes it. */
  dispatch: DispatchStart;
}

export function closingOf(input: ExecutionInput, estimatedInputTokens: number, idempotency: Closing['idempotency'], dispatch: DispatchStart): Record<string, unknown> {
  const { request, ...rest } = input;
  const closing: Closing = { input: { ...rest, request: { operation: request.operation } }, estimated_input_tokens: estimatedInputTokens, idempotency, dispatch };
  return closing as unknown as Record<string, unknown>;
}

export function closingFrom(raw: Record<string, unknown>): Closing {
  return raw as unknown as Closing;
}
