import type { WorkflowHandle } from '@temporalio/client';
import type { QueryDefinition } from '@temporalio/common';

/**
 * A workflow's live state by query, or null when it does not answer within `ms` (no worker, the
 * workflow closed, the server slow): callers fall back to what PostgreSQL holds.
 */
export async function queryWithin<T>(handle: WorkflowHandle, query: QueryDefinition<T, []>, ms = 2000): Promise<T | null> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      handle.query(query),
      new Promise<null>((resolve) => {
        timer = setTimeout(() => resolve(null), ms);
      }),
    ]);
  } catch {
    return null;
  } finally {
    if (timer) clearTimeout(timer);
  }
}
