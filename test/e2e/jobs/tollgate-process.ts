/** A Tollgate process of its own (role from TOLLGATE_TEST_ROLE), for the job crash tests (SIGKILL). */
import { startTestTollgate } from '../../support/tollgate';

async function main() {
  const env = JSON.parse(process.env.TOLLGATE_TEST_ENV ?? '{}') as NodeJS.ProcessEnv;
  const role = (process.env.TOLLGATE_TEST_ROLE ?? 'worker') as 'api' | 'worker' | 'all';
  const tg = await startTestTollgate({ env, role });
  process.stdout.write(`ready ${tg.url ?? '-'}\n`);
}
main().catch((err) => {
  console.error(err);
  process.exit(1);
});
