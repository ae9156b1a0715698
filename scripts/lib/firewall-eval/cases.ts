/**
 * A case of the firewall's evaluation set, its split, and the helpers every source of cases shares.
 *
 * Every case gets a split, `dev` or `test`, from a SHA-256 of its `group` (the text, or the jailbreak
 * template / seed it was made from, so variants of one seed never straddle the splits). Rules are tuned
 * on dev only; test is reported, never tuned on.
 */
import { createHash } from 'node:crypto';

export type EvalCategory = 'injection' | 'jailbreak' | 'secret' | 'pii' | 'benign';
export interface EvalCase {
  id: string;
  split: 'dev' | 'test';
  category: EvalCategory;
  /** Where the case comes from (a key of SOURCES.md). */
  source: string;
  /** Sub-kind: the hard-negative class, the obfuscation, the key format... */
  kind?: string;
  /** Who wrote the text in a chat: system prompts and tool output are inspected with a role-aware policy. */
  role?: 'system' | 'user' | 'tool';
  /** Project toggle the case needs to be flagged (e-mail / phone detectors). */
  requires?: 'detect_pii_email' | 'detect_pii_phone';
  text: string;
  group?: string;
}

export const sha = (s: string) => createHash('sha256').update(s).digest('hex');
export const splitOf = (group: string): 'dev' | 'test' => (parseInt(sha(group).slice(0, 8), 16) % 2 === 0 ? 'dev' : 'test');

export function makeCase(category: EvalCategory, source: string, text: string, extra: Partial<EvalCase> = {}): EvalCase {
  const group = extra.group ?? text;
  return { id: sha(`${source}\n${text}`).slice(0, 12), split: splitOf(group), category, source, ...extra, text, group };
}

/** Deterministic sample: the n items with the smallest hash. */
export function sample<T>(xs: T[], n: number, key: (x: T) => string): T[] {
  return xs
    .map((x) => [sha(key(x)), x] as const)
    .sort((a, b) => (a[0] < b[0] ? -1 : 1))
    .slice(0, n)
    .map((p) => p[1]);
}

/** The cases whose text (trimmed, lower-cased) no earlier case has. */
export function dedupe(cases: EvalCase[]): EvalCase[] {
  const seen = new Set<string>();
  return cases.filter((c) => {
    const k = c.text.trim().toLowerCase();
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}
