import { DETECTORS, FirewallCategory } from './detectors';
import { detectInjection } from './injection';
import { baseView, decodedViews } from './normalize';

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

/**
 * A piece of inspectable text. A plain string is user text (what every caller passes today); a
 * role-tagged item lets a caller mark the system prompt (not scored for injection: defensive rules
 * are expected there; still inspected for secrets and personal data) or tool output (inspected like
 * user text, since indirect injections arrive there).
 */
export type InspectableText = string | { role: 'system' | 'user' | 'tool'; text: string };

const ORDER: FirewallCategory[] = ['prompt_injection', 'secret', 'pii'];
/** Longer texts are inspected in full; this only guards against pathological inputs. */
const MAX_INSPECT_CHARS = 1_000_000;

/** Runs every enabled detector over all inspectable text (normalised, and with embedded encodings decoded). */
export function inspectText(texts: InspectableText[], opts: FirewallOptions = {}): FirewallResult {
  const hits = new Set<FirewallCategory>();
  const ruleIds: string[] = [];
  for (const item of texts) {
    const raw = typeof item === 'string' ? item : item?.text;
    if (!raw || typeof raw !== 'string') continue;
    const role = typeof item === 'string' ? 'user' : item.role;
    // Normalise: NFKC, invisible (zero-width, bidi) characters dropped, diacritics stripped, confusables mapped.
    const text = baseView(raw.slice(0, MAX_INSPECT_CHARS));
    const decoded = decodedViews(text);
    const inj = detectInjection(text, decoded, role);
    if (inj.length) {
      hits.add('prompt_injection');
      ruleIds.push(...inj);
    }
    for (const d of DETECTORS) {
      if (d.toggle && !opts[d.toggle]) continue;
      if (d.test(text) || (d.category === 'secret' && decoded.some((t) => d.test(t)))) {
        hits.add(d.category);
        ruleIds.push(d.id);
      }
    }
  }
  const categories = ORDER.filter((c) => hits.has(c));
  return { detected: categories.length > 0, categories, ruleIds };
}
