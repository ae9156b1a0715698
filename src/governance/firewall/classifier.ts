/**
 * A small linear classifier for prompt injection and jailbreaks, one weak signal next to the phrase
 * rules in injection.ts: logistic regression over hashed features of a text, with weights trained
 * offline by scripts/firewall-train.ts and shipped in classifier-weights.json (no download at run
 * time). Inference is a hash and a table look-up per feature: no allocation beyond one scratch
 * buffer, linear in the text.
 *
 * Features (one hashed table of 2^bits int8 weights):
 * - words of the words view (lower case, leetspeak and spelled-out letters undone, see normalize.ts),
 *   as unigrams and bigrams, and the length class, scaled by 1/sqrt(number of word features);
 * - character 4-grams of the base view, lower-cased, whitespace runs as one space, so punctuation
 *   (fake delimiters, optimiser suffixes such as `describing.\ + similarlyNow`) counts too, scaled by
 *   1/sqrt(number of 4-grams).
 * Texts longer than WINDOW characters are scored per window (half overlapping) and the highest
 * window counts, so an instruction buried in a long document is not averaged away.
 */
import weightsFile from './classifier-weights.json';
import { wordsView } from './normalize';

export interface ClassifierWeights {
  bits: number;
  scale: number;
  bias: number;
  /**
   * Logits: below the first the classifier takes one point away from weak rule signals; at or above
   * the second it adds one point to the rule score, at or above the third two points.
   */
  thresholds: ClassifierThresholds;
  /** Int8 weights, base64. */
  weights: string;
}

export type ClassifierThresholds = [veto: number, one: number, two: number];

/** Characters per scored window; texts up to this length are scored whole. */
export const WINDOW = 4096;
const SEED_WORD = 0x9e3779b1;
const SEED_BIGRAM = 0x85ebca6b;
const SEED_CHAR = 0xc2b2ae35;
const SEED_LENGTH = 0x27d4eb2f;
/**
 * Feature counts below these floors are normalised as if they were the floor, so a very short text
 * ("Hi") does not weigh its few features as heavily as a whole paragraph.
 */
export const WORD_NORM_FLOOR = 8;
export const CHAR_NORM_FLOOR = 32;

function mix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x7feb352d);
  h ^= h >>> 15;
  h = Math.imul(h, 0x846ca68b);
  h ^= h >>> 16;
  return h >>> 0;
}

let scratch = new Int32Array(1024);

/**
 * Feature indices of one window into `scratch` (word features first, then character 4-grams).
 * Returns the two counts. `words` is the words view of `base`.
 */
export function extractFeatures(base: string, words: string, mask: number): { words: number; chars: number; indices: Int32Array } {
  const need = words.length * 2 + base.length + 8;
  if (scratch.length < need) scratch = new Int32Array(Math.max(need, scratch.length * 2));
  const out = scratch;
  let n = 0;
  // Words view: ' w1 w2 ... ' (single spaces, ASCII).
  let h = 0;
  let inWord = false;
  let prev = 0;
  let havePrev = false;
  for (let i = 0; i < words.length; i++) {
    const c = words.charCodeAt(i);
    if (c === 32) {
      if (inWord) {
        const w = mix(h ^ SEED_WORD);
        out[n++] = w & mask;
        if (havePrev) out[n++] = mix(Math.imul(prev, 31) ^ w ^ SEED_BIGRAM) & mask;
        prev = w;
        havePrev = true;
        inWord = false;
      }
      continue;
    }
    if (!inWord) {
      h = 0x811c9dc5;
      inWord = true;
    }
    h = Math.imul(h ^ c, 0x01000193);
  }
  // One feature for the length class (log2 of the word count), so length priors are learned, not implied.
  out[n++] = mix(Math.min(12, Math.floor(Math.log2(n + 1))) ^ SEED_LENGTH) & mask;
  const nWords = n;
  // Character 4-grams of the lower-cased base view, whitespace runs collapsed.
  let c0 = 0;
  let c1 = 0;
  let c2 = 0;
  let seen = 0;
  let lastSpace = true;
  for (let i = 0; i < base.length; i++) {
    let c = base.charCodeAt(i);
    if (c === 32 || c === 9 || c === 10 || c === 13) {
      if (lastSpace) continue;
      lastSpace = true;
      c = 32;
    } else {
      lastSpace = false;
      if (c >= 65 && c <= 90) c += 32;
    }
    if (seen >= 3) out[n++] = mix(Math.imul(Math.imul(Math.imul(c0, 0x01000193) ^ c1, 0x01000193) ^ c2, 0x01000193) ^ c ^ SEED_CHAR) & mask;
    c0 = c1;
    c1 = c2;
    c2 = c;
    seen++;
  }
  const nChars = n - nWords;
  return { words: nWords, chars: nChars, indices: out };
}

/** Parsed weights (int8) and their scale. */
export interface LoadedModel {
  mask: number;
  scale: number;
  bias: number;
  thresholds: ClassifierThresholds;
  w: Int8Array | Float64Array;
}

export function loadModel(file: ClassifierWeights): LoadedModel {
  const buf = Buffer.from(file.weights, 'base64');
  return {
    mask: (1 << file.bits) - 1,
    scale: file.scale,
    bias: file.bias,
    // A threshold that is not a number (JSON turns ±Infinity into null) never fires.
    thresholds: file.thresholds.map((t, i) => (typeof t === 'number' ? t : i === 0 ? -Infinity : Infinity)) as ClassifierThresholds,
    w: new Int8Array(buf.buffer, buf.byteOffset, buf.byteLength),
  };
}

const MODEL = loadModel(weightsFile as ClassifierWeights);

/** The logit of one window (features already in the words view and base view). */
export function windowLogit(model: LoadedModel, base: string, words: string): number {
  const f = extractFeatures(base, words, model.mask);
  const w = model.w;
  const idx = f.indices;
  let sw = 0;
  for (let i = 0; i < f.words; i++) sw += w[idx[i]];
  let sc = 0;
  for (let i = f.words, e = f.words + f.chars; i < e; i++) sc += w[idx[i]];
  return model.bias + model.scale * (sw / Math.sqrt(Math.max(f.words, WORD_NORM_FLOOR)) + sc / Math.sqrt(Math.max(f.chars, CHAR_NORM_FLOOR)));
}

/**
 * The highest window logit of a text in the base view. `words` (optional) is its words view when
 * the caller has it already (texts up to WINDOW characters).
 */
export function injectionLogit(base: string, words?: string, model: LoadedModel = MODEL): number {
  if (base.length <= WINDOW) return windowLogit(model, base, words ?? wordsView(base));
  let best = -Infinity;
  for (let start = 0; start < base.length; start += WINDOW / 2) {
    const piece = base.slice(start, start + WINDOW);
    best = Math.max(best, windowLogit(model, piece, wordsView(piece)));
    if (start + WINDOW >= base.length) break;
  }
  return best;
}

/** Points the classifier adds to the rule score of a text: −1, 0, 1 or 2 (see ClassifierWeights.thresholds). */
export function classifierPoints(logit: number, thresholds: ClassifierThresholds = MODEL.thresholds): number {
  return logit >= thresholds[2] ? 2 : logit >= thresholds[1] ? 1 : logit < thresholds[0] ? -1 : 0;
}
