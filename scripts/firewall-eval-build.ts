/**
 * Builds the out-of-sample evaluation set of the prompt firewall.
 *
 *   npx tsx scripts/firewall-eval-build.ts            # both parts
 *   npx tsx scripts/firewall-eval-build.ts generated  # only the synthetic part (no snapshots needed)
 *
 * Two parts, written to test/fixtures/firewall-eval/:
 * - generated.json (committed): synthetic secrets in documented provider formats, synthetic personal
 *   data with valid checksums, and hard negatives (placeholder keys, e-mails with a sender address,
 *   URLs containing `xoxo-`, defensive system prompts, security questions, checksum-invalid numbers).
 *   A seeded generator makes it reproducible.
 * - public.json (not committed, see SOURCES.md): cases taken from public repositories read from local
 *   snapshots (`/work/.mirror/<owner>+<name>/repo`, or FIREWALL_EVAL_MIRROR), plus obfuscated and
 *   embedded (indirect) variants of those cases made here.
 *
 * Each source of cases is a module of scripts/lib/firewall-eval/; a case and its split are in cases.ts.
 */
import fs from 'node:fs';
import path from 'node:path';
import { dedupe, sha, type EvalCase } from './lib/firewall-eval/cases';
import { derivedInjection, publicExtractionAndIndirect, publicInjection, publicJailbreak } from './lib/firewall-eval/public-attacks';
import { publicBenign, publicPersonaAndRules } from './lib/firewall-eval/public-benign';
import { publicSecrets } from './lib/firewall-eval/public-secrets';
import { rng } from './lib/firewall-eval/rng';
import { generatedHardNegatives } from './lib/firewall-eval/synthetic-hard-negatives';
import { publicPii } from './lib/firewall-eval/public-pii';
import { publicUnseen } from './lib/firewall-eval/public-unseen';
import { generatedPii } from './lib/firewall-eval/synthetic-pii';
import { generatedPiiIntl } from './lib/firewall-eval/synthetic-pii-intl';
import { generatedSecrets } from './lib/firewall-eval/synthetic-secrets';
import { MIRROR, missingSnapshots, PINS, UNSEEN_PINS } from './lib/firewall-snapshots';

const OUT_DIR = path.join(__dirname, '..', 'test', 'fixtures', 'firewall-eval');

function write(file: string, description: string, cases: EvalCase[], keepGroups = false) {
  const counts: Record<string, Record<string, number>> = {};
  for (const c of cases) {
    counts[c.split] ??= {};
    counts[c.split][c.category] = (counts[c.split][c.category] ?? 0) + 1;
  }
  // public.json keeps the split groups: the training script folds by them (generated.json stays byte for byte).
  const body = { description, counts, cases: keepGroups ? cases : cases.map(({ group: _g, ...c }) => c) };
  fs.writeFileSync(path.join(OUT_DIR, file), JSON.stringify(body, null, 1) + '\n');
  process.stdout.write(`${file}: ${cases.length} cases ${JSON.stringify(counts)}\n`);
}

function main() {
  fs.mkdirSync(OUT_DIR, { recursive: true });
  const r = rng(20);
  const generated = dedupe([...generatedSecrets(r), ...generatedPii(r), ...generatedHardNegatives(r)]);
  write('generated.json', 'Synthetic cases (seeded generator in scripts/firewall-eval-build.ts): secrets in documented key formats with random bodies, personal data with valid checksums, hard negatives. No real key or person.', generated);
  // International personal data: a file of its own, so the figures above stay comparable (same seed, same cases).
  write('generated-pii-intl.json', 'Synthetic international personal data and its hard negatives (scripts/lib/firewall-eval/synthetic-pii-intl.ts): values drawn against the firewall\'s own check-digit functions.', dedupe(generatedPiiIntl(rng(41))));
  if (process.argv[2] === 'generated') return;
  const missing = missingSnapshots();
  if (missing.length) {
    process.stderr.write(
      `public.json: not built: snapshots missing or without their pinned commit under ${MIRROR}:\n` +
        missing.map((r) => `  git clone --bare https://github.com/${r.replace('+', '/')} ${MIRROR}/${r}/repo   # needs ${PINS[r]}\n`).join(''),
    );
    process.exitCode = 1;
    return;
  }
  const inj = publicInjection();
  const pub = dedupe([...inj, ...derivedInjection(inj), ...publicJailbreak(), ...publicBenign(), ...publicPersonaAndRules(), ...publicExtractionAndIndirect(), ...publicSecrets()]);
  write('public.json', 'Cases from public repositories (see SOURCES.md), built locally from snapshots pinned in scripts/lib/firewall-snapshots.ts; not committed.', pub, true);
  process.stdout.write(`public.json sha256 ${sha(fs.readFileSync(path.join(OUT_DIR, 'public.json'), 'utf8'))}\n`);
  // python-stdnum's example numbers: a file of its own (public.json keeps its checksum), evaluation only, all in test.
  write('public-pii.json', 'Example numbers of python-stdnum (LGPL-2.1) in sentences, evaluation only (test split); built locally, not committed.', dedupe(publicPii()), true);
  process.stdout.write(`public-pii.json sha256 ${sha(fs.readFileSync(path.join(OUT_DIR, 'public-pii.json'), 'utf8'))}\n`);
  // The unseen public set: repositories never read while writing the detectors, all test, reported apart.
  const unseenMissing = missingSnapshots(UNSEEN_PINS);
  if (unseenMissing.length) {
    process.stderr.write(`public-unseen.json: not built, snapshots missing: ${unseenMissing.join(', ')} (pins in scripts/lib/firewall-snapshots.ts)\n`);
    return;
  }
  write('public-unseen.json', 'The unseen public set (scripts/lib/firewall-eval/public-unseen.ts), evaluation only (test split); built locally, not committed.', dedupe(publicUnseen()), true);
  process.stdout.write(`public-unseen.json sha256 ${sha(fs.readFileSync(path.join(OUT_DIR, 'public-unseen.json'), 'utf8'))}\n`);
}

if (require.main === module) main();
