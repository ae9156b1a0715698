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
});
