/** `npm run firewall:eval`: detection and false-positive rates of the prompt firewall on the labelled corpus. */
import fs from 'node:fs';
import path from 'node:path';
import { evaluateCorpus, CorpusItem } from '../src/governance/firewall/evaluate-corpus';

const file = process.argv[2] ?? path.join(__dirname, '..', 'test', 'fixtures', 'firewall-corpus.json');
const corpus = JSON.parse(fs.readFileSync(file, 'utf8')) as { items: CorpusItem[] };
const r = evaluateCorpus(corpus.items);
const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
process.stdout.write(
  [
    `corpus: ${path.relative(process.cwd(), file)} (${r.malicious} malicious/sensitive, ${r.benign} benign)`,
    `detection rate:      ${pct(r.detectionRate)} (${r.detected}/${r.malicious}; right category ${r.detectedWithCategory}/${r.malicious})`,
    `false-positive rate: ${pct(r.falsePositiveRate)} (${r.falsePositives}/${r.benign})`,
    ...(r.missed.length ? ['missed:', ...r.missed.map((t) => `  - ${JSON.stringify(t.slice(0, 100))}`)] : []),
    ...(r.falselyFlagged.length ? ['false positives:', ...r.falselyFlagged.map((t) => `  - ${JSON.stringify(t.slice(0, 100))}`)] : []),
  ].join('\n') + '\n',
);
