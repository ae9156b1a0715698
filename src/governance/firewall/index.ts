import { DETECTORS, FirewallCategory } from './detectors';

export type { FirewallCategory } from './detectors';

export interface FirewallOptions {
  detect_pii_email?: boolean;
  detect_pii_phone?: boolean;
}

export interface FirewallResult {
  detected: boolean;
  /** Categories hit, in a fixed order; the only thing ever reported outside this module. */
  categories: FirewallCategory[];
  /** Internal rule ids, for tests and the corpus evaluation only: never put them in a response, event or log. */
  ruleIds: string[];
}

const ORDER: FirewallCategory[] = ['prompt_injection', 'secret', 'pii'];
/** Longer texts are inspected in full; this only guards against pathological inputs. */
const MAX_INSPECT_CHARS = 1_000_000;

/** A piece of inspectable text with the role of its author; a plain string is user text. */
export type InspectableText = string | { role: 'system' | 'user' | 'tool'; text: string };

/** Runs every enabled detector over all inspectable text. */
export function inspectText(texts: InspectableText[], opts: FirewallOptions = {}): FirewallResult {
  const hits = new Set<FirewallCategory>();
  const ruleIds: string[] = [];
  for (const item of texts) {
    const raw = typeof item === 'string' ? item : item?.text;
    if (!raw) continue;
    // Normalise: NFKC folds full-width and compatibility characters; zero-width characters are dropped.
    const text = raw.slice(0, MAX_INSPECT_CHARS).normalize('NFKC').replace(/[\u200B-\u200D\u2060\uFEFF]/g, '');
    for (const d of DETECTORS) {
      if (d.toggle && !opts[d.toggle]) continue;
      if (d.test(text)) {
        hits.add(d.category);
        ruleIds.push(d.id);
      }
    }
  }
  const categories = ORDER.filter((c) => hits.has(c));
  return { detected: categories.length > 0, categories, ruleIds };
}
