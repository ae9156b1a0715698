/** A Tollgate API process of its own, for the crash tests (killed with SIGKILL mid-call). */
import { startTestTollgate } from '../../support/tollgate';

async function main() {
  const env = JSON.parse(process.env.TOLLGATE_TEST_ENV ?? '{}');
  const tg = await startTestTollgate({ env, role: 'api' });
  process.stdout.write(`ready ${tg.url}\n`);
}
main().catch((err) => {
  console.error(err);
  process.exit(1);
});
