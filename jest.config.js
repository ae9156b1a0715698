/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: {
    '^.+\\.(t|j)sx?$': ['@swc/jest', { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'commonjs' } }],
  },
  // ESM-only packages are compiled to CommonJS with the rest (every other package stays untransformed):
  // jose 6, and the Vercel AI SDK (ai, @ai-sdk/*, and its @workflow/serde) that the agent-framework tests use.
  // The OTLP exporter's transport loads `http` with a dynamic import(), which jest's CommonJS runtime
  // refuses; compiled, it is a require (test/e2e/telemetry/otlp-receiver.test.ts exports through it).
  transformIgnorePatterns: ['/node_modules/(?!(jose|ai|@ai-sdk|@workflow|@opentelemetry/otlp-exporter-base)/)'],
  // The AI SDK imports `zod/v4/locales/en.js`, which zod's exports map to its ESM build even for require:
  // take the CommonJS twin, so one zod instance is loaded.
  moduleNameMapper: { '^zod/v4/locales/(.*)\\.js$': 'zod/v4/locales/$1.cjs' },
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  testTimeout: 60000,
  maxWorkers: 2,
};
