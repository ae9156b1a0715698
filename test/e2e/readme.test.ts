/**
 * The README runs as written: every `bash` block of README.md (those marked
 * `<!-- readme-test: skip (why) -->` excepted) runs, in order, in one bash session — as a newcomer
 * pastes them into one terminal — against a started stack: an in-process Tollgate and the emulator,
 * with the `.data/dev.env` that `npm run dev` would write. Each block must finish without a failing
 * command (`set -e`), and the governed call must answer 200.
 *
 * The session runs in a directory under the checkout's ignored `.data/`, holding its own
 * `.data/dev.env`: `npm run` finds the checkout above it (as from any subdirectory), the CLI resolves
 * relative paths from it, and a developer's own `.data/dev.env` is never read or written.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { startHarness, Harness } from './executions/helpers';

const ROOT = path.resolve(__dirname, '..', '..');
const SKIP = /<!--\s*readme-test:\s*skip\b/;

/** The README's bash blocks, in order, each with whether it is marked skip. */
function bashBlocks(markdown: string): { code: string; skip: boolean; line: number }[] {
  const lines = markdown.split('\n');
  const blocks: { code: string; skip: boolean; line: number }[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (lines[i].trim() !== '```bash') continue;
    let prev = i - 1;
    while (prev >= 0 && lines[prev].trim() === '') prev--;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && lines[i].trim() !== '```'; i++) body.push(lines[i]);
    blocks.push({ code: body.join('\n'), skip: prev >= 0 && SKIP.test(lines[prev]), line: start + 1 });
  }
  return blocks;
}

function run(cwd: string, stdin: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  // Not the caller's npm context (a nested `npm run` would inherit its INIT_CWD and settings).
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('npm_') && k !== 'INIT_CWD' && !k.startsWith('TOLLGATE_') && k !== 'DATABASE_URL'));
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [path.join(cwd, 'readme.sh')], { cwd, env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(stdin);
  });
}

let h: Harness;
let dir: string;
beforeAll(async () => {
  h = await startHarness();
  dir = path.join(ROOT, '.data', `readme-test-${randomUUID()}`);
  mkdirSync(path.join(dir, '.data'), { recursive: true });
});
afterAll(async () => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  await h?.close();
});

describe('README.md', () => {
  const blocks = bashBlocks(readFileSync(path.join(ROOT, 'README.md'), 'utf8'));

  it('has bash blocks to run, and says why of each it skips', () => {
    expect(blocks.filter((b) => !b.skip).length).toBeGreaterThanOrEqual(2);
    expect(blocks[0].code).toContain('npm run dev');
    expect(blocks[0].skip).toBe(true);
  });

  it('every bash block runs, in order, against a started stack', async () => {
    // `npm run cli` installs dependencies when node_modules is older than the lock file: a test must not.
    const lockTime = (f: string) => statSync(path.join(ROOT, f)).mtimeMs;
    if (lockTime('package-lock.json') > lockTime('node_modules/.package-lock.json') + 1000) throw new Error('node_modules is older than package-lock.json: run npm install first');
    const p = await h.project();
    writeFileSync(
      path.join(dir, '.data', 'dev.env'),
      [
        `TOLLGATE_URL=${h.tg.url}`,
        `TOLLGATE_PROJECT_ID=${p.project.id}`,
        `TOLLGATE_API_KEY=${p.clientKey}`,
        `TOLLGATE_ADMIN_KEY=${p.adminKey}`,
        `TOLLGATE_EMULATOR_URL=${h.emu.url}`,
        `DATABASE_URL=${h.tg.config.databaseUrl}`,
        '',
      ].join('\n'),
    );
    const runnable = blocks.filter((b) => !b.skip);
    const script = ['set -eu', ...runnable.flatMap((b, i) => [`echo "::readme-block ${i} (README.md line ${b.line})"`, b.code]), 'echo "::readme-done"', ''].join('\n');
    writeFileSync(path.join(dir, 'readme.sh'), script);
    // The one line a newcomer types: the password `read` asks for.
    const r = await run(dir, 'a-long-readme-password\n');
    const failedIn = [...r.stdout.matchAll(/::readme-block \d+ \((README\.md line \d+)\)/g)].at(-1)?.[1];
    if (r.code !== 0) throw new Error(`the README's bash block at ${failedIn} failed (exit ${r.code}):\n${r.stdout.slice(-4000)}\n${r.stderr.slice(-4000)}`);
    expect(r.stdout).toContain('::readme-done');

    const [, first] = r.stdout.split(/::readme-block 0 .*\n/);
    // The governed call answered 200 with a completed envelope, and its timeline was found by its id.
    expect(first).toMatch(/HTTP\/1\.1 200 OK\r?\n/);
    expect(first).toMatch(/^x-svc-permit-id: permit_/im);
    expect(first).toContain('"status":"completed"');
    expect(first).toContain('permit.allowed');
    expect(first).not.toMatch(/"error"\s*:\s*\{/);
    // The export block downloaded a bundle of the calls above and verified it offline, not an empty one.
    const verified = r.stdout.match(/"object":\s*"export_verification"[\s\S]*?"events_verified":\s*(\d+)/);
    expect(verified).not.toBeNull();
    expect(Number(verified![1])).toBeGreaterThan(0);
    expect(r.stdout).toMatch(/"ok":\s*true/);
    // The CLI block made a project, a key, a member and a policy in the stack's database.
    const { rows } = await h.tg.db.query<{ id: string }>("SELECT id FROM projects WHERE name = 'acme' ORDER BY created_at DESC LIMIT 1");
    expect(rows).toHaveLength(1);
    const keys = await h.tg.db.query('SELECT 1 FROM api_keys WHERE project_id = $1', [rows[0].id]);
    expect(keys.rowCount).toBe(1);
  }, 240_000);
});
