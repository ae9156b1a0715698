import path from 'node:path';
import { ConfigError, loadConfig } from '../../src/config';

describe('loadConfig', () => {
  it('applies defaults for an empty environment', () => {
    const c = loadConfig({});
    expect(c.port).toBe(8080);
    expect(c.role).toBe('all');
    expect(c.temporal).toMatchObject({ address: '127.0.0.1:7233', namespace: 'default', taskQueue: 'tollgate' });
    expect(c.idempotencyRetentionHours).toBe(24);
    expect(c.providers.openai.baseUrl).toBe('https://api.openai.com');
    expect(c.providers.openai.apiKey).toBeUndefined();
  });

  it('reads provider endpoints and strips trailing slashes', () => {
    const c = loadConfig({ OPENAI_BASE_URL: 'http://127.0.0.1:9000/openai/', OPENAI_API_KEY: 'sk-x', GEMINI_API_KEY: 'g' });
    expect(c.providers.openai).toEqual({ baseUrl: 'http://127.0.0.1:9000/openai', apiKey: 'sk-x' });
    expect(c.providers.google.apiKey).toBe('g');
  });

  it.each([
    ['PORT', 'eighty'],
    ['PORT', '70000'],
    ['TOLLGATE_ROLE', 'scheduler'],
    ['DATABASE_URL', 'not a url'],
    ['LOG_LEVEL', 'loud'],
    ['MISTRAL_BASE_URL', '::'],
    ['TOLLGATE_MASTER_KEY', 'c2hvcnQ='],
  ])('names the bad variable %s=%s', (variable, value) => {
    let caught: unknown;
    try {
      loadConfig({ [variable]: value });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    expect((caught as ConfigError).problems.map((p) => p.variable)).toEqual([variable]);
    expect((caught as Error).message).toContain(variable);
  });

  it('requires TOLLGATE_MASTER_KEY in production, where nothing could be sealed without it', () => {
    expect(() => loadConfig({ NODE_ENV: 'production' })).toThrow(ConfigError);
    expect(() => loadConfig({ NODE_ENV: 'production' })).toThrow(/TOLLGATE_MASTER_KEY: is required with NODE_ENV=production/);
    expect(loadConfig({ NODE_ENV: 'production', TOLLGATE_MASTER_KEY: Buffer.alloc(32, 1).toString('base64') }).env).toBe('production');
    expect(loadConfig({ NODE_ENV: 'development' }).masterKey).toBeUndefined();
  });

  it('reports every bad variable at once', () => {
    expect(() => loadConfig({ PORT: 'x', TOLLGATE_ROLE: 'y' })).toThrow(/PORT.*TOLLGATE_ROLE|TOLLGATE_ROLE.*PORT/);
  });

  it('keeps archives in ARCHIVE_DIR unless ARCHIVE_S3_BUCKET is set, then in the bucket', () => {
    expect(loadConfig({}).archiveStore).toEqual({ kind: 'directory', dir: path.resolve('.data', 'archives') });
    expect(loadConfig({ ARCHIVE_DIR: '/srv/archives' }).archiveStore).toEqual({ kind: 'directory', dir: '/srv/archives' });
    expect(loadConfig({ ARCHIVE_DIR: '/srv/archives', ARCHIVE_S3_BUCKET: '' }).archiveStore.kind).toBe('directory');
    expect(
      loadConfig({
        ARCHIVE_DIR: '/srv/archives',
        ARCHIVE_S3_BUCKET: 'tollgate-archives',
        ARCHIVE_S3_ENDPOINT: 'http://127.0.0.1:7070',
        ARCHIVE_S3_ACCESS_KEY_ID: 'id',
        ARCHIVE_S3_SECRET_ACCESS_KEY: 'secret',
        ARCHIVE_S3_PREFIX: '/prod',
        ARCHIVE_S3_FORCE_PATH_STYLE: 'true',
      }).archiveStore,
    ).toEqual({ kind: 's3', bucket: 'tollgate-archives', endpoint: 'http://127.0.0.1:7070', region: 'us-east-1', accessKeyId: 'id', secretAccessKey: 'secret', prefix: 'prod/', forcePathStyle: true });
    expect(loadConfig({ ARCHIVE_S3_BUCKET: 'tollgate-archives', ARCHIVE_S3_REGION: 'eu-west-1' }).archiveStore).toMatchObject({ region: 'eu-west-1', prefix: '', forcePathStyle: false, accessKeyId: undefined });
  });

  it.each([
    [{ ARCHIVE_S3_BUCKET: 'b', ARCHIVE_S3_ACCESS_KEY_ID: 'id', ARCHIVE_S3_SECRET_ACCESS_KEY: 's' }, 'ARCHIVE_S3_BUCKET'],
    [{ ARCHIVE_S3_BUCKET: 'bucket', ARCHIVE_S3_ENDPOINT: 'not a url' }, 'ARCHIVE_S3_ENDPOINT'],
    [{ ARCHIVE_S3_BUCKET: 'bucket', ARCHIVE_S3_FORCE_PATH_STYLE: 'yes' }, 'ARCHIVE_S3_FORCE_PATH_STYLE'],
    [{ ARCHIVE_S3_BUCKET: 'bucket', ARCHIVE_S3_ACCESS_KEY_ID: 'id' }, 'ARCHIVE_S3_SECRET_ACCESS_KEY'],
    [{ ARCHIVE_S3_BUCKET: 'bucket', ARCHIVE_S3_SECRET_ACCESS_KEY: 'do-not-echo' }, 'ARCHIVE_S3_ACCESS_KEY_ID'],
  ])('names the bad archive store variable in %j', (env, variable) => {
    let caught: unknown;
    try {
      loadConfig(env);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    expect((caught as ConfigError).problems.map((p) => p.variable)).toEqual([variable]);
    expect((caught as Error).message).not.toContain('do-not-echo');
  });
});
