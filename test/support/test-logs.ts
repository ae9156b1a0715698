/**
 * Test logs go to files (issue 13, secret scan): with TEST_LOG_DIR set (jest global setup sets it),
 * every in-process Tollgate logs at TEST_LOG_LEVEL (default info) into a file of that directory
 * instead of being silent, and the global teardown scans them all for secrets and prompt text.
 */
import fs from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { createLogger, Logger } from '../../src/logger';

export function testLogLevel(): string {
  return process.env.TEST_LOG_LEVEL ?? (process.env.TEST_LOG_DIR ? 'info' : 'silent');
}

export function testLogger(level: string): Logger {
  const dir = process.env.TEST_LOG_DIR;
  if (!dir || level === 'silent') return createLogger(level);
  fs.mkdirSync(dir, { recursive: true });
  return createLogger(level, {}, pino.destination({ dest: path.join(dir, `${process.pid}-${randomUUID()}.log`), sync: true }));
}

/** Planted in prompts by a few tests; no log line may contain it. */
export const CANARY_PROMPT = 'tollgate-canary-prompt-7f3a9c';

/** Planted in MCP server credentials (bearer tokens, header values) by tests; no log line may contain it. */
export const CANARY_MCP_CREDENTIAL = 'tollgate-canary-mcp-credential-4b8e21';

/** Planted in project provider keys (management `PUT .../providers/{provider}/key`) by tests; no log line may contain it. */
export const CANARY_PROVIDER_KEY = 'tollgate-canary-provider-key-9d2c57';

/**
 * A webhook signing secret's shape (`whsec_` + base64 of 32 bytes, src/webhooks/signing.ts): the
 * service generates them, so tests cannot plant a canary; any such value in a log is a leak.
 */
export const WEBHOOK_SECRET_PATTERN = /whsec_[A-Za-z0-9+/]{40,}/;

export interface SecretFinding {
  file: string;
  line: number;
  kind: string;
  excerpt: string;
}

const PATTERNS: Array<[string, RegExp]> = [
  ['Tollgate API key', /tg_(?:client|admin)_[0-9A-Za-z]{40}/],
  ['Authorization header value', /"authorization"\s*:\s*"(?!\[redacted\])[^"]+"/i],
  ['Bearer credential', /Bearer\s+[A-Za-z0-9._~+/=-]{8,}/],
  ['OpenAI-style key', /\bsk-(?:ant-)?[A-Za-z0-9_-]{20,}/],
  ['canary prompt text', new RegExp(CANARY_PROMPT)],
  ['MCP server credential', new RegExp(CANARY_MCP_CREDENTIAL)],
  ['provider key', new RegExp(CANARY_PROVIDER_KEY)],
  ['webhook signing secret', WEBHOOK_SECRET_PATTERN],
];

/** Secrets in the log files of `dir`: the patterns above and the literal values in `literals` (provider keys and webhook secrets of the run). */
export function scanLogs(dir: string, literals: Array<[string, string]> = []): { files: number; lines: number; findings: SecretFinding[] } {
  const findings: SecretFinding[] = [];
  let files = 0;
  let lines = 0;
  if (!fs.existsSync(dir)) return { files, lines, findings };
  for (const name of fs.readdirSync(dir).filter((n) => n.endsWith('.log'))) {
    files += 1;
    const text = fs.readFileSync(path.join(dir, name), 'utf8');
    text.split('\n').forEach((l, i) => {
      if (!l) return;
      lines += 1;
      for (const [kind, re] of PATTERNS) {
        const m = re.exec(l);
        if (m) findings.push({ file: name, line: i + 1, kind, excerpt: l.slice(Math.max(0, m.index - 80), m.index + 120) });
      }
      for (const [kind, value] of literals) {
        const at = l.indexOf(value);
        if (at >= 0) findings.push({ file: name, line: i + 1, kind, excerpt: l.slice(Math.max(0, at - 80), at + 120) });
      }
    });
  }
  return { files, lines, findings };
}
