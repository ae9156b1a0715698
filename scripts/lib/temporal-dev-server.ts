import type { ChildProcess } from 'node:child_process';
import net from 'node:net';
import { SEARCH_ATTRIBUTE_REGISTRATIONS } from '../../workflows/search-attributes';
import { startListening } from './listening-process';

export interface DevServer {
  address: string;
  uiUrl: string | null;
  process: ChildProcess;
  stop(): Promise<void>;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/**
 * Starts `temporal server start-dev` with Tollgate's search attributes registered and eager
 * workflow start and eager activity execution enabled (the executionWorkflow's dispatch activity
 * is then handed back in the workflow task completion instead of going through matching: ~40 ms
 * less per execution, docs/performance.md). `dbFile` persists state (dev); omit it for an
 * in-memory server (tests).
 */
export async function startTemporalDevServer(opts: {
  cli: string;
  port: number;
  uiPort?: number | null;
  dbFile?: string;
  logFile?: NodeJS.WritableStream;
}): Promise<DevServer> {
  const args = ['server', 'start-dev', '--ip', '127.0.0.1', '--port', String(opts.port), '--log-level', 'warn', '--log-format', 'json'];
  if (opts.uiPort) args.push('--ui-port', String(opts.uiPort));
  else args.push('--headless');
  if (opts.dbFile) args.push('--db-filename', opts.dbFile);
  for (const sa of SEARCH_ATTRIBUTE_REGISTRATIONS) args.push('--search-attribute', `${sa.name}=${sa.type}`);
  args.push('--dynamic-config-value', 'system.enableEagerWorkflowStart=true');
  args.push('--dynamic-config-value', 'system.enableActivityEagerExecution=true');
  const server = await startListening({ name: 'temporal server start-dev', bin: opts.cli, args, port: opts.port, logFile: opts.logFile, timeoutMs: 60_000, pollMs: 200 });
  return {
    address: `127.0.0.1:${opts.port}`,
    uiUrl: opts.uiPort ? `http://127.0.0.1:${opts.uiPort}` : null,
    process: server.process,
    stop: server.stop,
  };
}
