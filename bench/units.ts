/**
 * `npm run bench:units`: one component's CPU in this process, no database or server (not a test).
 * Modes (`npm run bench:units -- --help`):
 *
 *   (default)          every unit below, one after the other
 *   --tokenizer        the token estimator; BENCH_COMPARE_DIR compares maintained libraries (units/tokenizer.ts)
 *   --firewall-redact  the firewall's redact action on a 4 KB prompt (units/firewall-redact.ts)
 *   --firewall-compare the firewall against a git ref, interleaved: inspection and redaction (units/firewall-compare.ts)
 *   --body-read        the event loop's longest wait while a body of the limit is read and parsed, per reader (units/body-read.ts)
 */
import { runModes } from './lib/modes';

const tokenizer = async (args: string[]) => (await import('./units/tokenizer')).run(args);
const firewallRedact = async () => (await import('./units/firewall-redact')).run();
const firewallCompare = async () => (await import('./units/firewall-compare')).run();
const bodyRead = async () => (await import('./units/body-read')).run();

runModes(
  'bench:units',
  {
    all: {
      about: 'every unit, one after the other',
      run: async () => {
        await tokenizer([]);
        await firewallRedact();
      },
    },
    tokenizer: { about: 'countTokens on ordinary and hostile texts (BENCH_COMPARE_DIR: against libraries)', run: tokenizer },
    'firewall-redact': { about: "the firewall's redact action (masking and check) on a 4 KB prompt", run: firewallRedact },
    'body-read': { about: "the event loop's longest wait while a 10 MiB JSON body is read and parsed: koa-body, the model-input reader, the proxy's parse", run: bodyRead },
    'firewall-compare': { about: 'the firewall against a git ref (BENCH_FIREWALL_REF, default main), interleaved: inspection and redaction', run: firewallCompare },
  },
  'all',
);
