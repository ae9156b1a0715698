/**
 * Trains the prompt firewall's injection classifier (src/governance/firewall/classifier.ts) and
 * writes its weights to src/governance/firewall/classifier-weights.json.
 *
 *   npx tsx scripts/firewall-eval-build.ts   # public.json from the snapshots (see SOURCES.md)
 *   npx tsx scripts/firewall-train.ts
 *
 * Logistic regression (AdaGrad, L2) over the hashed features of classifier.ts, on the training texts of
 * scripts/firewall-train-data.ts (never the test split). The two thresholds (logit for one point and
 * for two points added to the rule score) are chosen on out-of-fold predictions of a 5-fold
 * cross-validation grouped by split group: the highest recall on the dev attacks of the evaluation
 * set such that at most MAX_FP of its dev ordinary prompts, and of the other benign training texts, are
 * flagged. The final model is then trained on everything. Deterministic (seeded shuffles).
 */
import fs from 'node:fs';
import path from 'node:path';
import { CHAR_NORM_FLOOR, extractFeatures, WINDOW, WORD_NORM_FLOOR, type ClassifierThresholds, type ClassifierWeights, type LoadedModel } from '../src/governance/firewall/classifier';
import { injectionViews, systemPromptHits, viewFlagged, type ViewProfile } from '../src/governance/firewall/injection';
import { baseView, decodedViews, wordsView } from '../src/governance/firewall/normalize';
import { sha } from './lib/firewall-eval/cases';
import { trainingTexts, type TrainText } from './firewall-train-data';

const BITS = 17;
const SIZE = 1 << BITS;
const EPOCHS = 12;
const LEARNING_RATE = 0.3;
const L2 = 2e-6;
const FOLDS = 5;
/**
 * Share of ordinary prompts that may be flagged out of fold: the dev prompts of the evaluation set
 * (target ≤ 2% on test, all detectors, so half of it), and the other benign training texts (T0 task
 * prompts full of news about weapons and crime, where the rules alone flag 0.8%).
 */
const MAX_FP = 0.015;
const MAX_FP_EXTRA = 0.015;
const OUT = path.join(__dirname, '..', 'src', 'governance', 'firewall', 'classifier-weights.json');

interface Sample {
  idx: Int32Array;
  nw: number;
  nc: number;
  y: number;
  weight: number;
}

function windowsOf(base: string): string[] {
  if (base.length <= WINDOW) return [base];
  const out: string[] = [];
  for (let start = 0; start < base.length; start += WINDOW / 2) {
    out.push(base.slice(start, start + WINDOW));
    if (start + WINDOW >= base.length) break;
  }
  return out;
}

function featurise(t: TrainText): Sample[] {
  return windowsOf(baseView(t.text)).map((w) => {
    const f = extractFeatures(w, wordsView(w), SIZE - 1);
    return { idx: f.indices.slice(0, f.words + f.chars), nw: f.words, nc: f.chars, y: t.label, weight: t.weight };
  });
}

function rng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function train(samples: Sample[]): { w: Float64Array; bias: number } {
  const w = new Float64Array(SIZE);
  const g2 = new Float64Array(SIZE).fill(1e-8);
  let bias = 0;
  let bg2 = 1e-8;
  // Classes weighted to equal totals.
  const pos = samples.reduce((s, x) => s + (x.y ? x.weight : 0), 0);
  const neg = samples.reduce((s, x) => s + (x.y ? 0 : x.weight), 0);
  const classW = [1, neg / Math.max(pos, 1)];
  const order = samples.map((_, i) => i);
  const rand = rng(20);
  for (let epoch = 0; epoch < EPOCHS; epoch++) {
    for (let i = order.length - 1; i > 0; i--) {
      const j = Math.floor(rand() * (i + 1));
      [order[i], order[j]] = [order[j], order[i]];
    }
    for (const k of order) {
      const s = samples[k];
      const xw = 1 / Math.sqrt(Math.max(s.nw, WORD_NORM_FLOOR));
      const xc = 1 / Math.sqrt(Math.max(s.nc, CHAR_NORM_FLOOR));
      const total = s.nw + s.nc;
      const x = (i: number) => (i < s.nw ? xw : xc);
      let z = bias;
      for (let i = 0; i < total; i++) z += w[s.idx[i]] * x(i);
      const p = 1 / (1 + Math.exp(-z));
      const g = (p - s.y) * s.weight * classW[s.y];
      for (let i = 0; i < total; i++) {
        const h = s.idx[i];
        const grad = g * x(i) + L2 * w[h];
        g2[h] += grad * grad;
        w[h] -= (LEARNING_RATE * grad) / Math.sqrt(g2[h]);
      }
      bg2 += g * g;
      bias -= (LEARNING_RATE * g) / Math.sqrt(bg2);
    }
  }
  return { w, bias };
}

/** Int8 weights: the scale maps the largest |weight| to 127. */
function quantise(m: { w: Float64Array; bias: number }, thresholds: ClassifierThresholds): { file: ClassifierWeights; model: LoadedModel } {
  let max = 0;
  for (const v of m.w) max = Math.max(max, Math.abs(v));
  const scale = max / 127 || 1;
  const q = new Int8Array(SIZE);
  for (let i = 0; i < SIZE; i++) q[i] = Math.round(m.w[i] / scale);
  // JSON has no infinities: an open-ended threshold is written as ±1e9.
  const finite = thresholds.map((t) => Math.max(-1e9, Math.min(1e9, t))) as ClassifierThresholds;
  const file: ClassifierWeights = { bits: BITS, scale, bias: m.bias, thresholds: finite, weights: Buffer.from(q.buffer).toString('base64') };
  return { file, model: { mask: SIZE - 1, scale, bias: m.bias, thresholds, w: q } };
}

/** How a held-out text is judged: its views (user/tool), or the fixed system-prompt verdict. */
type Judged = { t: TrainText; views: ViewProfile[] | null; system: boolean };

function judge(t: TrainText, model: LoadedModel): Judged {
  const base = baseView(t.text);
  if (t.role === 'system') return { t, views: null, system: systemPromptHits(base).length > 0 };
  return { t, views: injectionViews(base, decodedViews(base), t.role === 'tool' ? 'tool' : 'user', model), system: false };
}
const flagged = (j: Judged, th: ClassifierThresholds) => (j.views ? j.views.some((v) => viewFlagged(v, th).flagged) : j.system);

const kindOf = (t: TrainText) => (t.evalDev ? t.source.split(':')[1] : t.label ? 'extra-attack' : 'extra-benign');

function rates(judged: Judged[], th: ClassifierThresholds) {
  const r: Record<string, { n: number; hit: number }> = {};
  for (const j of judged) {
    const k = kindOf(j.t);
    r[k] ??= { n: 0, hit: 0 };
    r[k].n += 1;
    if (flagged(j, th)) r[k].hit += 1;
  }
  return r;
}

function chooseThresholds(judged: Judged[]): ClassifierThresholds {
  const negLogits = judged
    .filter((j) => j.t.label === 0 && j.views)
    .map((j) => Math.max(...j.views!.map((v) => v.logit)))
    .sort((a, b) => a - b);
  const q = (p: number) => negLogits[Math.min(negLogits.length - 1, Math.floor(p * negLogits.length))];
  const cands = [...new Set([0.8, 0.85, 0.9, 0.93, 0.95, 0.96, 0.97, 0.98, 0.985, 0.99, 0.993, 0.995, 0.997, 0.998, 0.999, 1].map(q))].sort((a, b) => a - b);
  cands.push(cands[cands.length - 1] + 1, cands[cands.length - 1] + 3);
  let best: ClassifierThresholds = [-Infinity, Infinity, Infinity];
  let bestRecall = -1;
  for (const t2 of cands) {
    // One point needs the classifier to lean towards an attack (p ≥ 0.5): a single weak rule signal
    // ("act as", "hypothetical") plus a classifier merely unsure must not flag an ordinary prompt.
    for (const t1 of [...cands, 0].filter((c) => c <= t2 && c >= 0)) {
      // The veto needs the classifier to lean towards ordinary text (p < 0.5).
      for (const veto of [-Infinity, -8, -6, -5, -4, -3, -2, -1, 0]) {
        const r = rates(judged, [veto, t1, t2]);
        const fp = (k: string) => (r[k] ? r[k].hit / r[k].n : 0);
        if (fp('benign') > MAX_FP || fp('extra-benign') > MAX_FP_EXTRA) continue;
        const hit = (r.injection?.hit ?? 0) + (r.jailbreak?.hit ?? 0);
        if (hit > bestRecall) {
          bestRecall = hit;
          best = [veto, t1, t2];
        }
      }
    }
  }
  return best;
}

function main() {
  const t0 = Date.now();
  const texts = trainingTexts();
  const samples = texts.map(featurise);
  const count = (f: (t: TrainText) => boolean) => texts.filter(f).length;
  process.stdout.write(`training texts: ${texts.length} (attacks ${count((t) => t.label === 1)}, ordinary ${count((t) => t.label === 0)}); by source:\n`);
  const bySource = new Map<string, number>();
  for (const t of texts) bySource.set(t.source, (bySource.get(t.source) ?? 0) + 1);
  for (const [s, n] of [...bySource].sort()) process.stdout.write(`  ${s.padEnd(48)} ${n}\n`);

  // Cross-validation, folds by split group.
  const fold = texts.map((t) => parseInt(sha(t.group).slice(0, 8), 16) % FOLDS);
  const judged: Judged[] = [];
  for (let k = 0; k < FOLDS; k++) {
    const m = quantise(train(samples.filter((_, i) => fold[i] !== k).flat()), [-Infinity, Infinity, Infinity]).model;
    texts.forEach((t, i) => {
      if (fold[i] === k) judged.push(judge(t, m));
    });
  }
  const th = chooseThresholds(judged);
  process.stdout.write(`\nthresholds (logit): minus one point (weak rule signals only) < ${th[0]}, one point ≥ ${th[1].toFixed(3)}, two points ≥ ${th[2].toFixed(3)}\n`);
  process.stdout.write(`out-of-fold (5-fold, grouped) with the rules, by kind — what to expect on unseen dev-like data:\n`);
  const r = rates(judged, th);
  for (const [k, v] of Object.entries(r).sort()) process.stdout.write(`  ${k.padEnd(16)} flagged ${((v.hit / v.n) * 100).toFixed(1)}% (${v.hit}/${v.n})\n`);
  const bySrc = new Map<string, { n: number; hit: number }>();
  for (const j of judged.filter((x) => x.t.evalDev)) {
    const g = bySrc.get(j.t.source) ?? { n: 0, hit: 0 };
    g.n += 1;
    if (flagged(j, th)) g.hit += 1;
    bySrc.set(j.t.source, g);
  }
  for (const [k, v] of [...bySrc].sort()) process.stdout.write(`    ${k.padEnd(52)} ${((v.hit / v.n) * 100).toFixed(1)}% (${v.hit}/${v.n})\n`);
  const rulesOnly = rates(judged, [-Infinity, Infinity, Infinity]);
  process.stdout.write(`  (rules alone: ${Object.entries(rulesOnly).sort().map(([k, v]) => `${k} ${((v.hit / v.n) * 100).toFixed(1)}%`).join(', ')})\n`);

  const final = quantise(train(samples.flat()), th);
  fs.writeFileSync(OUT, JSON.stringify(final.file) + '\n');
  process.stdout.write(`\nwrote ${path.relative(process.cwd(), OUT)} (${fs.statSync(OUT).size} bytes) in ${((Date.now() - t0) / 1000).toFixed(0)} s\n`);
}

main();
