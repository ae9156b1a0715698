/** A Tollgate worker in its own process, for the worker-death test (killed with SIGKILL). */
import { startTestTollgate } from '../../support/tollgate';

async function main() {
  const env = JSON.parse(process.env.WORKER_ENV ?? '{}');
  await startTestTollgate({ env, role: 'worker' });
  process.stdout.write('ready\n');
}
main().catch((err) => {
  console.error(err);
  process.exit(1);
});
