/** Tests on a candidate secret's value: randomness, and whether it is a documentation placeholder. */

/** Shannon entropy in bits per character. */
export function entropy(s: string): number {
  const counts = new Map<string, number>();
  for (const ch of s) counts.set(ch, (counts.get(ch) ?? 0) + 1);
  let h = 0;
  for (const n of counts.values()) {
    const p = n / s.length;
    h -= p * Math.log2(p);
  }
  return h;
}

const PLACEHOLDER = /(?:x{4,}|X{4,}|\.{3}|\*{4,}|<[^>]*>|\$\{|your|YOUR|Your|here|HERE|placeholder|PLACEHOLDER|redacted|REDACTED|dummy|DUMMY|changeme|CHANGEME|0{6,})/;
const RUN = /(.)\1{5,}/;

/** True for documentation placeholders rather than keys ("xxxx…", "AIzaaaa…", "<your-key>", too few distinct characters). */
export function isPlaceholder(body: string): boolean {
  if (PLACEHOLDER.test(body)) return true;
  if (RUN.test(body)) return true;
  const distinct = new Set(body).size;
  return distinct < Math.min(8, Math.ceil(body.length / 3));
}

/** A secret found in a text: the span a redaction masks (the value only, for labelled values and URLs). */
export interface SecretHit {
  start: number;
  end: number;
  id: string;
}
