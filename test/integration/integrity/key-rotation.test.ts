/**
 * Key rotation on a database of its own (a rotation changes the signing key of every project in
 * the database, so it does not run on the database the other test files share).
 */
import { createPool, type Db } from '../../../src/db/pool';
import { appendEvents } from '../../../src/db/repositories/events';
import { chainAllProjectEvents } from '../../../src/db/repositories/event-chain';
import { listComplianceKeys } from '../../../src/db/repositories/integrity-log';
import { createProject } from '../../../src/db/repositories/projects';
import { complianceSigner } from '../../../src/integrity/keys';
import { issueCheckpoint } from '../../../src/integrity/log';
import { openNote, parseVerifierKey } from '../../../src/integrity/note';
import { runCli } from '../../../src/cli';
import { createOwnDatabase, type OwnDatabase } from '../../support/own-database';

describe('compliance signing key rotation', () => {
  let own: OwnDatabase;
  let url: string;
  let config: { env: 'test'; masterKey: undefined; databaseUrl: string };
  let db: Db;

  beforeAll(async () => {
    own = await createOwnDatabase('rotation');
    url = own.url;
    config = { env: 'test', masterKey: undefined, databaseUrl: url };
    db = createPool(url, 4);
  });
  afterAll(async () => {
    await db?.end();
    await own?.drop();
  });

  async function grow(projectId: string, n: number) {
    await appendEvents(db, Array.from({ length: n }, (_, i) => ({ projectId, eventType: 'permit.allowed', source: 'test', phase: 'permit', metadata: { i } })));
    await chainAllProjectEvents(db, projectId);
  }

  it('signs with the new key after a rotation; old checkpoints keep verifying with the retired key, listed with its validity', async () => {
    const project = await createProject(db, { name: 'rotation', plan: 'production' });
    const first = await complianceSigner(db, config);
    await grow(project.id, 3);
    const before = await issueCheckpoint(db, first, project.id);

    const rotated = (await runCli(['integrity', 'rotate-key'], { ...process.env, NODE_ENV: 'test', DATABASE_URL: url })) as { kid: string; vkey: string };
    expect(rotated.kid).not.toBe(first.kid);
    const second = await complianceSigner(db, config);
    expect(second.kid).toBe(rotated.kid);
    await grow(project.id, 2);
    const after = await issueCheckpoint(db, second, project.id);

    const oldV = parseVerifierKey(first.vkey);
    const newV = parseVerifierKey(rotated.vkey);
    expect(openNote(before.issued!.note, oldV).ok).toBe(true);
    expect(openNote(before.issued!.note, newV).ok).toBe(false);
    expect(openNote(after.issued!.note, newV).ok).toBe(true);
    expect(openNote(after.issued!.note, oldV).ok).toBe(false);
    expect([before.issued!.kid, after.issued!.kid]).toEqual([first.kid, second.kid]);

    const keys = await listComplianceKeys(db);
    expect(keys.map((k) => [k.kid, k.valid_until === null])).toEqual([
      [first.kid, false],
      [second.kid, true],
    ]);
  });
});
