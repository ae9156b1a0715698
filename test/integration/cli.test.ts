import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runCli } from '../../src/cli';
import { createPool } from '../../src/db/pool';
import { findApiKeyByKey, hashApiKey } from '../../src/db/repositories/api-keys';
import { findProject } from '../../src/db/repositories/projects';
import { writeEvents } from '../e2e/governance/helpers';

/** The operators' CLI against the run's database (same process, same code path as `npm run cli`). */
describe('operators CLI', () => {
  const env = { ...process.env };
  const db = createPool(process.env.DATABASE_URL!, 2);
  afterAll(async () => db.end());

  it('creates a project and keys shown once, lists them without the secret, and revokes', async () => {
    const project = (await runCli(['project', 'create', '--name', `cli-${Date.now()}`, '--plan', 'production'], env)) as any;
    expect(project).toMatchObject({ id: expect.stringMatching(/^proj_/), plan: 'production' });

    const created = (await runCli(['key', 'create', '--project', project.id, '--scope', 'admin', '--name', 'ops'], env)) as any;
    expect(created.key).toMatch(/^tg_admin_[0-9A-Za-z]{40}$/);
    const stored = await db.query('SELECT key_hash FROM api_keys WHERE id = $1', [created.id]);
    expect(Buffer.compare(stored.rows[0].key_hash, hashApiKey(created.key))).toBe(0);

    const listed = (await runCli(['key', 'list', '--project', project.id], env)) as any[];
    expect(listed.map((k) => k.id)).toEqual([created.id]);
    expect(JSON.stringify(listed)).not.toContain(created.key);

    await runCli(['key', 'revoke', '--key-id', created.id], env);
    expect((await findApiKeyByKey(db, created.key))!.revoked_at).toBeInstanceOf(Date);

    const replanned = (await runCli(['project', 'plan', '--project', project.id, '--plan', 'starter'], env)) as any;
    expect(replanned.plan).toBe('starter');
  });

  it('sets and reads the governance policy from a file', async () => {
    const project = (await runCli(['project', 'create', '--name', `cli-policy-${Date.now()}`], env)) as any;
    const file = path.join(os.tmpdir(), `policy-${project.id}.json`);
    fs.writeFileSync(file, JSON.stringify({ budgets: { monthly_usd_micros: 5_000_000 } }));
    await runCli(['policy', 'set', '--project', project.id, '--file', file], env);
    const read = (await runCli(['policy', 'get', '--project', project.id], env)) as any;
    expect(read.version).toBe(1);
    expect(read.document.budgets.monthly_usd_micros).toBe(5_000_000);
    fs.writeFileSync(file, JSON.stringify({ budgets: { monthly_usd_micros: 'lots' } }));
    await expect(runCli(['policy', 'set', '--project', project.id, '--file', file], env)).rejects.toThrow(/budgets\.monthly_usd_micros/);
  });

  describe('beside the stack `npm run dev` started', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-cli-'));
    const devEnvFile = path.join(dir, 'dev.env');
    const { DATABASE_URL: _unset, ...withoutDatabaseUrl } = env;
    afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

    it("uses the dev stack's database from its .data/dev.env when DATABASE_URL is not set", async () => {
      fs.writeFileSync(devEnvFile, `TOLLGATE_URL=http://127.0.0.1:8080\nDATABASE_URL=${process.env.DATABASE_URL}\n`);
      const project = (await runCli(['project', 'create', '--name', `cli-dev-${Date.now()}`], withoutDatabaseUrl, { devEnvFile })) as any;
      expect(await findProject(db, project.id)).toMatchObject({ id: project.id });
    });

    it('lets DATABASE_URL in the environment win over .data/dev.env', async () => {
      fs.writeFileSync(devEnvFile, 'DATABASE_URL=postgres://postgres@127.0.0.1:1/not_this_one\n');
      const project = (await runCli(['project', 'create', '--name', `cli-env-${Date.now()}`], env, { devEnvFile })) as any;
      expect(await findProject(db, project.id)).toMatchObject({ id: project.id });
    });

    it("resolves relative paths from the caller's directory (INIT_CWD), not the repository root", async () => {
      const project = (await runCli(['project', 'create', '--name', `cli-cwd-${Date.now()}`], env)) as any;
      fs.writeFileSync(path.join(dir, 'policy.json'), JSON.stringify({ budgets: { monthly_usd_micros: 7_000_000 } }));
      await runCli(['policy', 'set', '--project', project.id, '--file', 'policy.json'], { ...env, INIT_CWD: dir });
      const read = (await runCli(['policy', 'get', '--project', project.id], env)) as any;
      expect(read.document.budgets.monthly_usd_micros).toBe(7_000_000);
    });
  });

  it('runs retention for one project: its stored events before --before are archived to ARCHIVE_DIR and deleted', async () => {
    const archiveDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-cli-archives-'));
    const withDir = { ...env, ARCHIVE_DIR: archiveDir };
    const project = (await runCli(['project', 'create', '--name', `cli-retention-${Date.now()}`, '--plan', 'production'], env)) as any;
    await writeEvents(db, project.id, 20);
    await new Promise((r) => setTimeout(r, 20));
    const before = new Date().toISOString();
    await writeEvents(db, project.id, 3);
    const run = (await runCli(['retention', 'run', '--project', project.id, '--before', before], withDir)) as any;
    expect(run.projects[0]).toMatchObject({ project_id: project.id, outcome: 'archived', archive: { status: 'completed', log_range: { first_index: 0, last_index: 15 }, deleted: { events: 16 } } });
    expect(run.projects[0].archive.path.startsWith(path.join(archiveDir, project.id))).toBe(true);
    expect(fs.existsSync(run.projects[0].archive.path)).toBe(true);
    const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM events WHERE project_id = $1', [project.id]);
    expect(rows[0].n).toBe(7);
    expect(await runCli(['integrity', 'verify', '--project', project.id], env)).toMatchObject({ ok: true, archived_through: 16, events_verified: 7 });
    expect(((await runCli(['retention', 'run', '--project', project.id, '--before', before], withDir)) as any).projects[0].outcome).toBe('nothing_to_archive');
    await expect(runCli(['retention', 'run', '--project', project.id, '--before', 'yesterday'], env)).rejects.toThrow(/--before must be an ISO 8601 time/);
    await expect(runCli(['retention', 'run', '--project', 'proj_missing'], env)).rejects.toThrow(/project proj_missing not found/);
  });

  it('refuses bad usage with a message naming the problem', async () => {
    await expect(runCli(['key', 'create', '--project', 'proj_missing'], env)).rejects.toThrow(/project proj_missing not found/);
    await expect(runCli(['project', 'create', '--name', 'x', '--plan', 'gold'], env)).rejects.toThrow(/--plan must be one of/);
    await expect(runCli(['project', 'create'], env)).rejects.toThrow(/missing --name/);
    await expect(runCli(['frobnicate'], env)).rejects.toThrow(/unknown command/);
  });
});
