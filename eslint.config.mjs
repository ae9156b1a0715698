// Lint (npm test runs it). Product code and the emulator get typescript-eslint's type-checked
// recommendations; tests, benches and scripts the plain recommendations. The provider adapters and
// the emulator read untyped wire JSON, so the no-unsafe-* rules are off there until those readers
// are typed (zod schemas per provider): a ratchet, not a blessing.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const UNSAFE_ANY = {
  '@typescript-eslint/no-unsafe-member-access': 'off',
  '@typescript-eslint/no-unsafe-assignment': 'off',
  '@typescript-eslint/no-unsafe-return': 'off',
  '@typescript-eslint/no-unsafe-argument': 'off',
  '@typescript-eslint/no-unsafe-call': 'off',
  '@typescript-eslint/no-explicit-any': 'off',
};

export default tseslint.config(
  { ignores: ['dist/**', 'dist-emulator/**', 'dashboard/dist/**', 'node_modules/**', '.data/**', '.dev-build*/**', 'coverage/**', 'sdk/src/schema.d.ts'] },
  js.configs.recommended,
  {
    files: ['src/**/*.ts', 'activities/**/*.ts', 'workflows/**/*.ts', 'emulator/**/*.ts'],
    extends: [...tseslint.configs.recommendedTypeChecked],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
  },
  { files: ['src/providers/**/*.ts', 'emulator/**/*.ts', 'src/proxy/**/*.ts'], rules: UNSAFE_ANY },
  // Past four, a call's arguments are named (an options object): positional lists that long get
  // swapped silently. A module past 400 lines holds more than one concern: split it by concern.
  {
    files: ['src/**/*.ts', 'activities/**/*.ts', 'workflows/**/*.ts'],
    rules: { 'max-params': ['error', 4], 'max-lines': ['error', { max: 400 }] },
  },
  {
    files: ['test/**/*.ts', 'bench/**/*.ts', 'scripts/**/*.ts', 'sdk/**/*.ts', 'dashboard/**/*.{ts,tsx,mts}'],
    extends: [...tseslint.configs.recommended],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    files: ['**/*.cjs', '**/*.js'],
    languageOptions: { sourceType: 'commonjs', globals: { require: 'readonly', module: 'writable', process: 'readonly', __dirname: 'readonly', __filename: 'readonly', console: 'readonly', Buffer: 'readonly', setTimeout: 'readonly', Headers: 'readonly', Response: 'readonly' } },
  },
  {
    files: ['**/*.ts', '**/*.tsx', '**/*.mts'],
    plugins: { '@typescript-eslint': tseslint.plugin },
    rules: {
      // Interface methods that return promises are async even when an implementation needs no await.
      '@typescript-eslint/require-await': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', destructuredArrayIgnorePattern: '^_' }],
    },
  },
);
