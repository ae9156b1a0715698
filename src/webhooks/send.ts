/**
 * One webhook HTTP attempt: POST, through the SSRF guard's lookup, with a total timeout, no
 * redirects followed (a 3xx is a failure), the response body read up to a bound and truncated for
 * the delivery record.
 */
import http from 'node:http';
import https from 'node:https';
import type { AllowList, Resolver } from './ssrf';
import { guardedLookup, SsrfRefusedError } from './ssrf';

export interface SendResult {
  ok: boolean;
  statusCode: number | null;
  latencyMs: number;
  /** Retry-After of the answer, in seconds (429 / 503). */
  retryAfterSeconds: number | null;
  responseBody: string | null;
  error: string | null;
  /** The guard refused the target's address. */
  refused: boolean;
}

const RECORDED_BODY_CHARS = 1024;
const READ_BODY_BYTES = 64 * 1024;

function retryAfter(h: string | string[] | undefined): number | null {
  const v = Array.isArray(h) ? h[0] : h;
  if (!v) return null;
  if (/^\d+$/.test(v.trim())) return Number(v.trim());
  const at = Date.parse(v);
  return Number.isNaN(at) ? null : Math.max(0, Math.ceil((at - Date.now()) / 1000));
}

export async function sendWebhook(
  url: string,
  headers: Record<string, string>,
  body: string,
  opts: { timeoutMs: number; allow: AllowList; resolve?: Resolver; userAgent?: string },
): Promise<SendResult> {
  const started = Date.now();
  const target = new URL(url);
  const mod = target.protocol === 'https:' ? https : http;
  return new Promise<SendResult>((resolve) => {
    let settled = false;
    const done = (r: Omit<SendResult, 'latencyMs'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ ...r, latencyMs: Date.now() - started });
    };
    const req = mod.request(
      target,
      {
        method: 'POST',
        lookup: guardedLookup(opts.allow, opts.resolve),
        headers: { ...headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), 'user-agent': opts.userAgent ?? 'Tollgate-Webhooks/1' },
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          if (size < READ_BODY_BYTES) chunks.push(c);
          size += c.length;
        });
        const finish = () => {
          const status = res.statusCode ?? 0;
          const text = Buffer.concat(chunks).toString('utf8').slice(0, RECORDED_BODY_CHARS);
          const ok = status >= 200 && status < 300;
          done({
            ok,
            statusCode: status,
            retryAfterSeconds: retryAfter(res.headers['retry-after']),
            responseBody: text,
            error: ok ? null : status >= 300 && status < 400 ? `redirect (${status}) not followed` : `HTTP ${status}`,
            refused: false,
          });
        };
        res.on('end', finish);
        res.on('error', finish);
        res.on('aborted', finish);
      },
    );
    const timer = setTimeout(() => {
      req.destroy(new Error(`timed out after ${opts.timeoutMs} ms`));
    }, opts.timeoutMs);
    req.on('error', (err: Error) => {
      const refused = err instanceof SsrfRefusedError || (err as NodeJS.ErrnoException).code === 'ESSRF';
      done({ ok: false, statusCode: null, retryAfterSeconds: null, responseBody: null, error: refused ? `refused: ${err.message}` : err.message, refused });
    });
    req.end(body);
  });
}
