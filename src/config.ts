import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { deprecatedRoutesEnvSchema, type DeprecationNotice } from './deprecation-notices';

/**
 * Configuration is read once from the environment and validated here; every other module receives
 * the resulting object. A bad variable fails fast with its name in the message.
 */

const port = z.coerce.number().int().min(0).max(65535);
const url = z.string().url();
const optionalSecret = z
  .string()
  .optional()
  .transform((v) => (v === '' ? undefined : v));

export const PROVIDER_IDS = ['openai', 'anthropic', 'google', 'deepseek', 'mistral'] as const;
export type ProviderId = (typeof PROVIDER_IDS)[number];

/** Real provider hosts; `npm run dev` and the tests point these at the provider emulator instead. */
export const DEFAULT_PROVIDER_BASE_URLS: Record<ProviderId, string> = {
  openai: 'https://api.openai.com',
  anthropic: 'https://api.anthropic.com',
  google: 'https://generativelanguage.googleapis.com',
  deepseek: 'https://api.deepseek.com',
  mistral: 'https://api.mistral.ai',
};

const PROVIDER_ENV_PREFIX: Record<ProviderId, string> = {
  openai: 'OPENAI',
  anthropic: 'ANTHROPIC',
  google: 'GEMINI',
  deepseek: 'DEEPSEEK',
  mistral: 'MISTRAL',
};

const baseEnvSchema = z.object({
  NODE_ENV: z.enum(['development', 'test', 'production']).default('development'),
  TOLLGATE_ROLE: z.enum(['api', 'worker', 'all']).default('all'),
  HOST: z.string().min(1).default('0.0.0.0'),
  PORT: port.default(8080),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  DATABASE_URL: url.default('postgres://postgres@127.0.0.1:5432/tollgate'),
  DATABASE_POOL_MAX: z.coerce.number().int().min(1).max(500).default(20),
  /** How far V8's old generation may grow past the live set before a full collection (src/runtime/heap.ts); 0 = V8's own factor. */
  HEAP_GROWING_PERCENT: z.coerce.number().int().min(0).max(1000).default(30),
  TEMPORAL_ADDRESS: z.string().min(1).default('127.0.0.1:7233'),
  TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
  TEMPORAL_TASK_QUEUE: z.string().min(1).default('tollgate'),
  TEMPORAL_UI_URL: url.default('http://127.0.0.1:8233'),
  /** Path of a prebuilt workflow bundle (`npm run build`); without it the worker bundles at start. */
  TEMPORAL_WORKFLOW_BUNDLE: z.string().optional(),
  BODY_LIMIT_BYTES: z.coerce.number().int().min(1024).default(10 * 1024 * 1024),
  IDEMPOTENCY_RETENTION_HOURS: z.coerce.number().int().min(1).max(24 * 90).default(24),
  /** Days a call's records are kept before they are archived and deleted (unset or empty: kept forever); a project may override it. */
  RETENTION_DAYS: z.preprocess((v) => (v === undefined || (typeof v === 'string' && v.trim() === '') ? undefined : v), z.coerce.number().int().min(1).max(36500).optional()),
  /**
   * The nice value (0–19) of a thread that archives and deletes aged-out records apart from the
   * calls sharing its cores (Linux); 0 runs it in the calling thread.
   */
  RETENTION_NICE: z.coerce.number().int().min(0).max(19).default(0),
  /**
   * The share of the time (0–1] retention's work may take: after each slice of it, a pause that
   * leaves the rest to the calls on the same cores (src/retention/pace.ts); 1 never pauses.
   */
  RETENTION_CPU_SHARE: z.coerce.number().gt(0).max(1).default(0.5),
  /** Where retention's archives and compliance exports' files are written (created when missing), unless ARCHIVE_S3_BUCKET is set. */
  ARCHIVE_DIR: z.string().optional(),
  /** An S3-compatible bucket for them instead (docs/decisions/archive-store.md): set, it replaces ARCHIVE_DIR. */
  ARCHIVE_S3_BUCKET: z.preprocess((v) => (v === '' ? undefined : v), z.string().min(3).max(63).optional()),
  /** The S3 API's base URL for a store other than AWS (e.g. http://127.0.0.1:7070); unset, AWS's endpoint for the region. */
  ARCHIVE_S3_ENDPOINT: z.preprocess((v) => (v === '' ? undefined : v), url.optional()),
  ARCHIVE_S3_REGION: z.string().min(1).default('us-east-1'),
  /** Both or neither; without them the AWS SDK's own chain (environment, profile, instance role) answers. */
  ARCHIVE_S3_ACCESS_KEY_ID: optionalSecret,
  ARCHIVE_S3_SECRET_ACCESS_KEY: optionalSecret,
  /** Prepended to every key (e.g. `tollgate/`). */
  ARCHIVE_S3_PREFIX: z.string().default(''),
  /** `true`: bucket in the path (most S3-compatible servers), not in the host name. */
  ARCHIVE_S3_FORCE_PATH_STYLE: z.enum(['true', 'false']).default('false'),
  /** 32 bytes, base64: encrypts provider keys at rest and seeds the signing key in development. */
  TOLLGATE_MASTER_KEY: optionalSecret,
  /** Bearer token GET /metrics requires; without one, /metrics is open except in production (403). */
  METRICS_TOKEN: optionalSecret,
  PROVIDER_CONNECT_TIMEOUT_MS: z.coerce.number().int().min(1).default(5000),
  PROVIDER_TIMEOUT_MS: z.coerce.number().int().min(1).default(120000),
  /** How the record of an in-process call commits: `async` skips the WAL flush wait (docs/decisions/recording-commit.md). */
  RECORD_COMMIT: z.enum(['sync', 'async']).default('async'),
  /** A call lease is returned after this long without a call (docs/decisions/call-leases.md); unset, the reservations' own default (500 ms). */
  INTENT_LEASE_IDLE_MS: z.coerce.number().int().min(1).max(600_000).optional(),
  /** Async jobs (docs/decisions/jobs.md): per-project processing limit and the retry policy of upstream failures. */
  JOBS_MAX_PROCESSING_PER_PROJECT: z.coerce.number().int().min(1).max(10_000).default(16),
  JOBS_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(10).default(4),
  JOBS_RETRY_BASE_MS: z.coerce.number().int().min(1).default(2000),
  JOBS_RETRY_MAX_MS: z.coerce.number().int().min(1).default(60_000),
  /** The longest upstream Retry-After a job waits for before its next attempt (longer ones are capped). */
  JOBS_RETRY_AFTER_MAX_MS: z.coerce.number().int().min(1).default(300_000),
  JOBS_HEARTBEAT_TIMEOUT_MS: z.coerce.number().int().min(1000).default(30_000),
  /** Webhook delivery waits before each attempt, comma-separated durations in ms (the first is usually 0). */
  WEBHOOK_RETRY_SCHEDULE_MS: z
    .string()
    .regex(/^\s*\d+(\s*,\s*\d+)*\s*$/, 'comma-separated non-negative integers (milliseconds)')
    .default('0,5000,300000,1800000,7200000,18000000,36000000,36000000'),
  WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(15_000),
  /**
   * Webhook targets allowed although they resolve to loopback, private, link-local or metadata
   * addresses: comma-separated host names, IP addresses or CIDR ranges (tests and `npm run dev`).
   */
  WEBHOOK_ALLOWED_HOSTS: z.string().default(''),
  /** Whether this worker process runs the webhook fan-out (src/webhooks/fanout.ts). */
  WEBHOOK_FANOUT: z.enum(['on', 'off']).default('on'),
  /**
   * One deadline per managed MCP call (connect, initialize and the tool call); the documented 30 s
   * is also the cap, so this can only shorten it.
   */
  MCP_CALL_TIMEOUT_MS: z.coerce.number().int().min(100).max(30_000).default(30_000),
  /** GET /v1/governance/events/stream: a comment line this often on an idle stream. */
  EVENT_STREAM_HEARTBEAT_MS: z.coerce.number().int().min(100).max(300_000).default(15_000),
  /** A stream consumer whose socket buffer has not drained within this time is disconnected (it resumes with Last-Event-ID). */
  EVENT_STREAM_DRAIN_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(30_000),
  /** A compliance export step whose worker stopped heartbeating this long is retried on another worker. */
  COMPLIANCE_EXPORT_HEARTBEAT_TIMEOUT_MS: z.coerce.number().int().min(1000).max(600_000).default(30_000),
  /** Management sessions (docs/decisions/management-api.md): token lifetimes and login-failure limits. */
  AUTH_ACCESS_TOKEN_TTL_SECONDS: z.coerce.number().int().min(30).max(900).default(900),
  AUTH_REFRESH_TOKEN_TTL_SECONDS: z.coerce.number().int().min(60).max(90 * 86_400).default(30 * 86_400),
  AUTH_LOGIN_MAX_FAILURES: z.coerce.number().int().min(1).max(1000).default(5),
  AUTH_LOGIN_MAX_FAILURES_PER_IP: z.coerce.number().int().min(1).max(100_000).default(50),
  AUTH_LOGIN_WINDOW_SECONDS: z.coerce.number().int().min(1).max(86_400).default(900),
  /**
   * Key-encryption keys of project provider keys: comma-separated `<key id>:<32 bytes base64>`; the
   * first encrypts, the others still decrypt (rotation: `provider-keys rotate-kek`). Without it the
   * KEK derives from TOLLGATE_MASTER_KEY (key id `master-v1`), or a generated development key.
   */
  PROVIDER_KEY_KEKS: optionalSecret,
  /** Payment provider (Stripe wire format): API base, secret key, webhook signing secret, price ids of the plans. */
  STRIPE_API_BASE: url.default('https://api.stripe.com'),
  STRIPE_SECRET_KEY: optionalSecret,
  STRIPE_WEBHOOK_SECRET: optionalSecret,
  STRIPE_WEBHOOK_TOLERANCE_SECONDS: z.coerce.number().int().min(1).max(3600).default(300),
  STRIPE_PRICE_STARTER: z.string().optional(),
  STRIPE_PRICE_PRODUCTION: z.string().optional(),
  STRIPE_PRICE_ENTERPRISE: z.string().optional(),
  BILLING_SUCCESS_URL: url.default('http://127.0.0.1:8080/billing/success'),
  BILLING_CANCEL_URL: url.default('http://127.0.0.1:8080/billing/cancel'),
  /** Routes answered with Deprecation/Sunset/Link headers (JSON array, src/deprecation-notices.ts; the headers: src/api/deprecation.ts). */
  TOLLGATE_DEPRECATED_ROUTES: deprecatedRoutesEnvSchema,
});

/** Every setting read from the environment (docs/configuration.md lists each; test/unit/docs/configuration.test.ts holds them equal). */
export const envSchema = baseEnvSchema.extend(
  Object.fromEntries(
    PROVIDER_IDS.flatMap((p) => [
      [`${PROVIDER_ENV_PREFIX[p]}_BASE_URL`, url.default(DEFAULT_PROVIDER_BASE_URLS[p])],
      [`${PROVIDER_ENV_PREFIX[p]}_API_KEY`, optionalSecret],
    ]),
  ) as Record<string, z.ZodType<string | undefined>>,
);

export interface ProviderEndpoint {
  baseUrl: string;
  apiKey?: string;
}

export interface Config {
  env: 'development' | 'test' | 'production';
  role: 'api' | 'worker' | 'all';
  host: string;
  port: number;
  logLevel: string;
  databaseUrl: string;
  databasePoolMax: number;
  heapGrowingPercent: number;
  temporal: {
    address: string;
    namespace: string;
    taskQueue: string;
    uiUrl: string;
    workflowBundlePath?: string;
  };
  bodyLimitBytes: number;
  idempotencyRetentionHours: number;
  /** Retention (docs/decisions/retention-and-archives.md): days kept (undefined: forever). */
  retention: { days?: number; nice?: number; cpuShare?: number };
  /** Where archives and export files are kept (src/archive-store). */
  archiveStore: { kind: 'directory'; dir: string } | S3ArchiveStoreConfig;
  masterKey?: string;
  metricsToken?: string;
  providerTimeouts: { connectMs: number; totalMs: number };
  recordCommit: 'sync' | 'async';
  intentLeaseIdleMs?: number;
  providers: Record<ProviderId, ProviderEndpoint>;
  jobs: {
    maxProcessingPerProject: number;
    maxAttempts: number;
    retryBaseMs: number;
    retryMaxMs: number;
    retryAfterMaxMs: number;
    heartbeatTimeoutMs: number;
  };
  webhooks: {
    retryScheduleMs: number[];
    timeoutMs: number;
    allowedHosts: string[];
    fanout: boolean;
  };
  mcp: { callTimeoutMs: number };
  eventStream: { heartbeatMs: number; drainTimeoutMs: number };
  complianceExports: { heartbeatTimeoutMs: number };
  auth: {
    accessTokenTtlSeconds: number;
    refreshTokenTtlSeconds: number;
    loginMaxFailures: number;
    loginMaxFailuresPerIp: number;
    loginWindowSeconds: number;
  };
  /** Raw PROVIDER_KEY_KEKS (parsed by src/crypto/envelope.ts). */
  providerKeyKeks?: string;
  billing: {
    stripe: {
      apiBase: string;
      secretKey?: string;
      webhookSecret?: string;
      toleranceSeconds: number;
      prices: Partial<Record<'starter' | 'production' | 'enterprise', string>>;
    };
    successUrl: string;
    cancelUrl: string;
  };
  deprecatedRoutes: DeprecationNotice[];
}

export interface S3ArchiveStoreConfig {
  kind: 's3';
  bucket: string;
  endpoint?: string;
  region: string;
  accessKeyId?: string;
  secretAccessKey?: string;
  /** Empty or ending in `/`. */
  prefix: string;
  forcePathStyle: boolean;
}

export class ConfigError extends Error {
  constructor(readonly problems: { variable: string; message: string }[]) {
    super(
      'Invalid configuration: ' + problems.map((p) => `${p.variable}: ${p.message}`).join('; '),
    );
    this.name = 'ConfigError';
  }
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map((i) => ({ variable: String(i.path[0] ?? '?'), message: i.message })),
    );
  }
  const e = parsed.data as unknown as z.infer<typeof baseEnvSchema>;
  const byName = parsed.data as unknown as Record<string, string | undefined>;
  if (e.TOLLGATE_MASTER_KEY !== undefined && Buffer.from(e.TOLLGATE_MASTER_KEY, 'base64').length !== 32) {
    throw new ConfigError([{ variable: 'TOLLGATE_MASTER_KEY', message: 'must be 32 bytes encoded as base64' }]);
  }
  // Without it production cannot seal the compliance signing key, webhook secrets or provider
  // keys: checkpoints failed every round in the background, unnoticed (docs/decisions/secrets-at-rest.md).
  if (e.NODE_ENV === 'production' && e.TOLLGATE_MASTER_KEY === undefined) {
    throw new ConfigError([
      { variable: 'TOLLGATE_MASTER_KEY', message: 'is required with NODE_ENV=production (32 bytes, base64): it seals the compliance signing key, webhook secrets and provider keys' },
    ]);
  }
  if ((e.ARCHIVE_S3_ACCESS_KEY_ID === undefined) !== (e.ARCHIVE_S3_SECRET_ACCESS_KEY === undefined)) {
    const missing = e.ARCHIVE_S3_ACCESS_KEY_ID === undefined ? 'ARCHIVE_S3_ACCESS_KEY_ID' : 'ARCHIVE_S3_SECRET_ACCESS_KEY';
    throw new ConfigError([{ variable: missing, message: 'is required with the other ARCHIVE_S3_ key variable (set both or neither)' }]);
  }
  const providers = Object.fromEntries(
    PROVIDER_IDS.map((p) => [
      p,
      {
        baseUrl: String(byName[`${PROVIDER_ENV_PREFIX[p]}_BASE_URL`]).replace(/\/+$/, ''),
        apiKey: byName[`${PROVIDER_ENV_PREFIX[p]}_API_KEY`],
      },
    ]),
  ) as Record<ProviderId, ProviderEndpoint>;
  return {
    env: e.NODE_ENV,
    role: e.TOLLGATE_ROLE,
    host: e.HOST,
    port: e.PORT,
    logLevel: e.LOG_LEVEL,
    databaseUrl: e.DATABASE_URL,
    databasePoolMax: e.DATABASE_POOL_MAX,
    heapGrowingPercent: e.HEAP_GROWING_PERCENT,
    temporal: {
      address: e.TEMPORAL_ADDRESS,
      namespace: e.TEMPORAL_NAMESPACE,
      taskQueue: e.TEMPORAL_TASK_QUEUE,
      uiUrl: e.TEMPORAL_UI_URL,
      workflowBundlePath: e.TEMPORAL_WORKFLOW_BUNDLE,
    },
    bodyLimitBytes: e.BODY_LIMIT_BYTES,
    idempotencyRetentionHours: e.IDEMPOTENCY_RETENTION_HOURS,
    retention: { days: e.RETENTION_DAYS, nice: e.RETENTION_NICE, cpuShare: e.RETENTION_CPU_SHARE },
    archiveStore: e.ARCHIVE_S3_BUCKET
      ? {
          kind: 's3',
          bucket: e.ARCHIVE_S3_BUCKET,
          endpoint: e.ARCHIVE_S3_ENDPOINT,
          region: e.ARCHIVE_S3_REGION,
          accessKeyId: e.ARCHIVE_S3_ACCESS_KEY_ID,
          secretAccessKey: e.ARCHIVE_S3_SECRET_ACCESS_KEY,
          prefix: e.ARCHIVE_S3_PREFIX.replace(/^\/+/, '').replace(/([^/])$/, '$1/'),
          forcePathStyle: e.ARCHIVE_S3_FORCE_PATH_STYLE === 'true',
        }
      : { kind: 'directory', dir: path.resolve(e.ARCHIVE_DIR ?? path.join('.data', 'archives')) },
    masterKey: e.TOLLGATE_MASTER_KEY,
    metricsToken: e.METRICS_TOKEN,
    providerTimeouts: { connectMs: e.PROVIDER_CONNECT_TIMEOUT_MS, totalMs: e.PROVIDER_TIMEOUT_MS },
    recordCommit: e.RECORD_COMMIT,
    intentLeaseIdleMs: e.INTENT_LEASE_IDLE_MS,
    providers,
    jobs: {
      maxProcessingPerProject: e.JOBS_MAX_PROCESSING_PER_PROJECT,
      maxAttempts: e.JOBS_MAX_ATTEMPTS,
      retryBaseMs: e.JOBS_RETRY_BASE_MS,
      retryMaxMs: e.JOBS_RETRY_MAX_MS,
      retryAfterMaxMs: e.JOBS_RETRY_AFTER_MAX_MS,
      heartbeatTimeoutMs: e.JOBS_HEARTBEAT_TIMEOUT_MS,
    },
    webhooks: {
      retryScheduleMs: e.WEBHOOK_RETRY_SCHEDULE_MS.split(',').map((v) => Number(v.trim())),
      timeoutMs: e.WEBHOOK_TIMEOUT_MS,
      allowedHosts: e.WEBHOOK_ALLOWED_HOSTS.split(',').map((v) => v.trim().toLowerCase()).filter(Boolean),
      fanout: e.WEBHOOK_FANOUT === 'on',
    },
    mcp: { callTimeoutMs: e.MCP_CALL_TIMEOUT_MS },
    eventStream: { heartbeatMs: e.EVENT_STREAM_HEARTBEAT_MS, drainTimeoutMs: e.EVENT_STREAM_DRAIN_TIMEOUT_MS },
    complianceExports: { heartbeatTimeoutMs: e.COMPLIANCE_EXPORT_HEARTBEAT_TIMEOUT_MS },
    auth: {
      accessTokenTtlSeconds: e.AUTH_ACCESS_TOKEN_TTL_SECONDS,
      refreshTokenTtlSeconds: e.AUTH_REFRESH_TOKEN_TTL_SECONDS,
      loginMaxFailures: e.AUTH_LOGIN_MAX_FAILURES,
      loginMaxFailuresPerIp: e.AUTH_LOGIN_MAX_FAILURES_PER_IP,
      loginWindowSeconds: e.AUTH_LOGIN_WINDOW_SECONDS,
    },
    providerKeyKeks: e.PROVIDER_KEY_KEKS,
    billing: {
      stripe: {
        apiBase: e.STRIPE_API_BASE.replace(/\/+$/, ''),
        secretKey: e.STRIPE_SECRET_KEY,
        webhookSecret: e.STRIPE_WEBHOOK_SECRET,
        toleranceSeconds: e.STRIPE_WEBHOOK_TOLERANCE_SECONDS,
        prices: Object.fromEntries(
          ([['starter', e.STRIPE_PRICE_STARTER], ['production', e.STRIPE_PRICE_PRODUCTION], ['enterprise', e.STRIPE_PRICE_ENTERPRISE]] as const).filter(([, v]) => v),
        ),
      },
      successUrl: e.BILLING_SUCCESS_URL,
      cancelUrl: e.BILLING_CANCEL_URL,
    },
    deprecatedRoutes: e.TOLLGATE_DEPRECATED_ROUTES,
  };
}

/** KEY=value lines, as `npm run dev` writes `.data/dev.env`; {} when the file is absent. */
export function readEnvFile(file: string): Record<string, string> {
  if (!existsSync(file)) return {};
  return Object.fromEntries(
    readFileSync(file, 'utf8')
      .split('\n')
      .filter((l) => l.includes('=') && !l.startsWith('#'))
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
  );
}

/**
 * The environment with the database of the stack `npm run dev` started in this checkout (its
 * `.data/dev.env`) when DATABASE_URL is not set: the operators' CLI then works beside that stack
 * without flags. A DATABASE_URL in the environment always wins; without either, the schema's default.
 */
export function withDevStackDatabase(env: NodeJS.ProcessEnv, devEnvFile: string): NodeJS.ProcessEnv {
  if (env.DATABASE_URL) return env;
  const databaseUrl = readEnvFile(devEnvFile).DATABASE_URL;
  return databaseUrl ? { ...env, DATABASE_URL: databaseUrl } : env;
}

/** Environment variable names per provider, for docs and the dev runner. */
export function providerEnvNames(p: ProviderId): { baseUrl: string; apiKey: string } {
  return { baseUrl: `${PROVIDER_ENV_PREFIX[p]}_BASE_URL`, apiKey: `${PROVIDER_ENV_PREFIX[p]}_API_KEY` };
}
