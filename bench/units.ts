/**
 * `npm run bench:units`: one component's CPU in this process, no database or server (not a test).
 * Modes (`npm run bench:units -- --help`):
 *
 *   (default)          every unit below, one after the other
 *   --tokenizer        the token estimator; BENCH_COMPARE_DIR compares maintained libraries (units/tokenizer.ts)
 *   --firewall-redact  the firewall's redact action on a 4 KB prompt (units/firewall-redact.ts)
 */
import { runModes } from './lib/modes';

const tokenizer = async (args: string[]) => (await import('./units/tokenizer')).run(args);
const firewallRedact = async () => (await import('./units/firewall-redact')).run();

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
  },
  'all',
);
