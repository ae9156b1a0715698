import { Client } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';

export interface TemporalHandles {
  connection: NativeConnection;
  client: Client;
}

const RETRY_INTERVAL_MS = 500;

/**
 * One NativeConnection shared by the worker and the client: eager workflow start needs the client
 * and the worker on the same connection, and it saves a second gRPC channel.
 */
export async function connectTemporal(opts: {
  address: string;
  namespace: string;
  /** Keeps trying this long (every 500 ms) before giving up with the last error. */
  retryForMs?: number;
  /** Told of each failed attempt that will be retried (1 for the first). */
  onRetry?: (err: unknown, attempt: number) => void;
}): Promise<TemporalHandles> {
  const deadline = Date.now() + (opts.retryForMs ?? 0);
  for (let attempt = 1; ; attempt++) {
    try {
      const connection = await NativeConnection.connect({ address: opts.address });
      const client = new Client({ connection, namespace: opts.namespace });
      return { connection, client };
    } catch (err) {
      if (Date.now() >= deadline) throw err;
      opts.onRetry?.(err, attempt);
      await new Promise((r) => setTimeout(r, RETRY_INTERVAL_MS));
    }
  }
}

/** True when the frontend answers within `timeoutMs`. */
export async function temporalReady(connection: NativeConnection, timeoutMs = 2000): Promise<boolean> {
  try {
    await connection.withDeadline(Date.now() + timeoutMs, () => connection.workflowService.getSystemInfo({}));
    return true;
  } catch {
    return false;
  }
}
