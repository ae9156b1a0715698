import { parseArgs } from 'node:util';
import path from 'node:path';
import { ConfigError, loadConfig, withDevStackDatabase } from '../config';
import { createPool } from '../db/pool';
import { migrate } from '../db/migrate';
import { createProject, findProject, Plan, PLANS, setProjectPlan } from '../db/repositories/projects';
import { createApiKey, KEY_SCOPES, KeyScope, listApiKeys, revokeApiKey } from '../db/repositories/api-keys';
import { existsSync, readFileSync } from 'node:fs';
import { getPolicy, PolicyValidationError, updatePolicy } from '../db/repositories/policies';
import { verifyExportCommand } from '../compliance/verify-command';
import { rotateComplianceSigner } from '../integrity/keys';
import { verifyLog } from '../integrity/verify-log';
import { runRetention } from '../retention/run';
import { addMember, createUser, UserInputError } from '../auth/users';
import { rotateProviderKeyKek } from '../management/provider-keys';

const USAGE = `Usage: npm run cli -- <command> [options]

  The database is $DATABASE_URL; when unset, that of the stack \`npm run dev\` started in this checkout
  (.data/dev.env); else postgres://postgres@127.0.0.1:5432/tollgate. Relative paths are the caller's.

  migrate                                         apply pending database migrations
  project create --name <name> [--plan <plan>]    plan: starter (default), production, enterprise
  project plan --project <id> --plan <plan>       change a project's plan
  key create --project <id> [--scope client|admin] [--name <label>]
                                                  prints the key once; only its hash is stored
  key list --project <id>
  key revoke --key-id <id>
  policy get --project <id>                       print the governance policy document and version
  policy set --project <id> --file <json> [--replace]
                                                  JSON merge patch of the policy (whole document with --replace)
  verify-export <bundle.tar|dir> --key <vkey|file>
                                                  verifies a compliance export offline (no server, no database):
                                                  signatures, file hashes, Merkle proofs, the hash chain;
                                                  exits 1 and names the first mismatch
  integrity rotate-key                            retires the checkpoint/manifest signing key, activates a new one
  integrity verify --project <id>                 checks the project's events against the hash chain and their
                                                  leaf hashes, and its latest checkpoint against the chain;
                                                  exits 1 and names what failed
  retention run [--project <id>] [--before <ISO time>]
                                                  archives each project's records older than its retention
                                                  (RETENTION_DAYS or the project's retention_days; --before:
                                                  that cutoff instead) to ARCHIVE_DIR or the ARCHIVE_S3_BUCKET,
                                                  verifies the stored archive, then deletes them
  user create --email <email>                     password from $TOLLGATE_USER_PASSWORD or the first line of stdin
  user add --email <email> --project <id> --role owner|admin|viewer
                                                  adds the user to a project (or changes the role)
  provider-keys rotate-kek                        re-wraps every project provider key's data key under the first
                                                  PROVIDER_KEY_KEKS entry (keep the old entries until it finishes)
`;

class UsageError extends Error {}

/** Where `npm run dev` writes the settings of the stack it started in this checkout. */
export const DEV_ENV_FILE = path.resolve(__dirname, '..', '..', '.data', 'dev.env');

export interface CliOptions {
  /** The dev stack's settings, read for DATABASE_URL when the environment sets none. */
  devEnvFile?: string;
}

async function readStdinLine(): Promise<string> {
  if (process.stdin.isTTY) throw new UsageError('set TOLLGATE_USER_PASSWORD or pipe the password on stdin');
  let text = '';
  for await (const chunk of process.stdin) text += String(chunk);
  return text.split(/\r?\n/)[0] ?? '';
}

function need(value: string | undefined, flag: string): string {
  if (!value) throw new UsageError(`missing --${flag}`);
  return value;
}

function oneOf<T extends string>(value: string, allowed: readonly T[], flag: string): T {
  if (!(allowed as readonly string[]).includes(value)) throw new UsageError(`--${flag} must be one of ${allowed.join(', ')}`);
  return value as T;
}

export async function runCli(argv: string[], env: NodeJS.ProcessEnv = process.env, options: CliOptions = {}): Promise<unknown> {
  // npm runs scripts from the repository root and keeps the caller's directory in INIT_CWD: paths
  // given to `npm run cli` are the caller's.
  const callerDir = env.INIT_CWD || process.cwd();
  const fromCaller = (p: string) => path.resolve(callerDir, p);
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      name: { type: 'string' },
      plan: { type: 'string' },
      project: { type: 'string' },
      scope: { type: 'string' },
      'key-id': { type: 'string' },
      file: { type: 'string' },
      replace: { type: 'boolean' },
      key: { type: 'string' },
      email: { type: 'string' },
      role: { type: 'string' },
      before: { type: 'string' },
    },
  });
  const [noun, verb] = positionals;
  // Offline: no configuration, no database.
  if (noun === 'verify-export') {
    // --key is a verifier key or a file holding one: a file when that path exists.
    const key = need(values.key, 'key');
    return verifyExportCommand(fromCaller(need(verb, 'bundle (a path)')), existsSync(fromCaller(key)) ? fromCaller(key) : key);
  }
  const config = loadConfig(withDevStackDatabase(env, options.devEnvFile ?? DEV_ENV_FILE));
  if (noun === 'migrate') return { applied: await migrate(config.databaseUrl) };
  // Retention holds one connection for its project's lock and reads an archive's parts side by side.
  const db = createPool(config.databaseUrl, 4);
  try {
    switch (`${noun} ${verb}`) {
      case 'project create': {
        const plan = oneOf<Plan>(values.plan ?? 'starter', PLANS, 'plan');
        return await createProject(db, { name: need(values.name, 'name'), plan });
      }
      case 'project plan': {
        const plan = oneOf<Plan>(need(values.plan, 'plan'), PLANS, 'plan');
        const project = await setProjectPlan(db, need(values.project, 'project'), plan);
        if (!project) throw new UsageError(`project ${values.project} not found`);
        return project;
      }
      case 'key create': {
        const projectId = need(values.project, 'project');
        if (!(await findProject(db, projectId))) throw new UsageError(`project ${projectId} not found`);
        const scope = oneOf<KeyScope>(values.scope ?? 'client', KEY_SCOPES, 'scope');
        const { record, key } = await createApiKey(db, { projectId, scope, name: values.name });
        return { ...record, key, note: 'Store this key now: it is shown once and only its hash is kept.' };
      }
      case 'key list':
        return await listApiKeys(db, need(values.project, 'project'));
      case 'key revoke': {
        const record = await revokeApiKey(db, need(values['key-id'], 'key-id'));
        if (!record) throw new UsageError(`key ${values['key-id']} not found`);
        return record;
      }
      case 'policy get': {
        const projectId = need(values.project, 'project');
        if (!(await findProject(db, projectId))) throw new UsageError(`project ${projectId} not found`);
        return await getPolicy(db, projectId);
      }
      case 'policy set': {
        const projectId = need(values.project, 'project');
        if (!(await findProject(db, projectId))) throw new UsageError(`project ${projectId} not found`);
        let patch: unknown;
        try {
          patch = JSON.parse(readFileSync(fromCaller(need(values.file, 'file')), 'utf8'));
        } catch (err) {
          throw new UsageError(`--file: ${err instanceof Error ? err.message : String(err)}`);
        }
        try {
          return await updatePolicy(db, { projectId, patch, mode: values.replace ? 'replace' : 'merge', updatedBy: 'cli', now: new Date() });
        } catch (err) {
          if (err instanceof PolicyValidationError) {
            throw new UsageError(
              'invalid policy: ' + err.zodError.issues.map((i) => `${i.path.join('.') || '(document)'}: ${i.message}`).join('; '),
            );
          }
          throw err;
        }
      }
      case 'integrity rotate-key':
        return await rotateComplianceSigner(db, config);
      case 'integrity verify': {
        const projectId = need(values.project, 'project');
        if (!(await findProject(db, projectId))) throw new UsageError(`project ${projectId} not found`);
        return await verifyLog(db, projectId);
      }
      case 'retention run': {
        let before: Date | undefined;
        if (values.before !== undefined) {
          before = new Date(values.before);
          if (Number.isNaN(before.getTime())) throw new UsageError('--before must be an ISO 8601 time');
        }
        if (values.project && !(await findProject(db, values.project))) throw new UsageError(`project ${values.project} not found`);
        return await runRetention({ db, config }, { projectId: values.project, before, now: new Date() });
      }
      case 'user create':
        return await createUser(db, { email: need(values.email, 'email'), password: env.TOLLGATE_USER_PASSWORD ?? (await readStdinLine()) });
      case 'provider-keys rotate-kek':
        return await rotateProviderKeyKek(db, config);
      case 'user add':
        return await addMember(db, { email: need(values.email, 'email'), projectId: need(values.project, 'project'), role: need(values.role, 'role') });
      default:
        throw new UsageError(`unknown command "${positionals.join(' ')}"`);
    }
  } finally {
    await db.end();
  }
}

if (require.main === module) {
  runCli(process.argv.slice(2)).then(
    (result) => {
      process.stdout.write(JSON.stringify(result, null, 2) + '\n');
      const verification = result as { object?: string; ok?: boolean; failures?: ({ message: string } | string)[] } | null;
      if ((verification?.object === 'export_verification' || verification?.object === 'log_verification') && !verification.ok) {
        const first = verification.failures?.[0];
        process.stderr.write(`verification FAILED: ${(typeof first === 'string' ? first : first?.message) ?? 'unknown'}\n`);
        process.exitCode = 1;
      }
    },
    (err) => {
      if (err instanceof UsageError || err instanceof UserInputError) process.stderr.write(`${err.message}\n\n${USAGE}`);
      else if (err instanceof ConfigError) process.stderr.write(`${err.message}\n`);
      else process.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(err instanceof UsageError || err instanceof UserInputError ? 64 : 1);
    },
  );
}
