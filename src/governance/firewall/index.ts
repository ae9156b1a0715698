import { DETECTORS, FirewallCategory } from './detectors';
import { detectInjection } from './injection';
import { baseView, decodedViews } from './normalize';
import { JointScan } from './joint-scan';
import { inspectInWorker } from './pool';
import type { InspectableText } from './roles';

export { closeFirewallPool } from './pool';
export { Redactor, REDACTABLE, maskRequest, surfaceRedaction, firewallHeader, type RedactCounts, type RedactionResult } from './redact';

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
 * A piece of inspectable text: a plain string is user text; a role-tagged item marks the system
 * prompt or tool output (see roles.ts and the role-aware policy in injection.ts).
 */
export type { InspectableText } from './roles';

const ORDER: FirewallCategory[] = ['prompt_injection', 'secret', 'pii'];
/** Longer texts are inspected in full; this only guards against pathological inputs. */
const MAX_INSPECT_CHARS = 1_000_000;

/**
 * Texts longer than this in total (characters) are inspected in a worker thread by
 * prepareInspection, so one large request never blocks the event loop for the others.
 */
export const OFFLOAD_THRESHOLD_CHARS = 64 * 1024;

/** Rule id → category and toggle, for filtering an all-detectors result by a project's toggles. */
const DETECTOR_BY_ID = new Map(DETECTORS.map((d) => [d.id, d]));

const ALL_ON: FirewallOptions = { detect_pii_email: true, detect_pii_phone: true };

/** Rule ids of the detectors enabled by opts (default: all), in inspection order. */
export function inspectAllDetectors(texts: InspectableText[], opts: FirewallOptions = ALL_ON): string[] {
  const ruleIds: string[] = [];
  for (const item of texts) {
    const raw = typeof item === 'string' ? item : item?.text;
    if (!raw || typeof raw !== 'string') continue;
    const role = typeof item === 'string' ? 'user' : item.role;
    // Normalise: NFKC, invisible (zero-width, bidi) characters dropped, diacritics stripped, confusables mapped.
    const text = baseView(raw.slice(0, MAX_INSPECT_CHARS));
    const decoded = decodedViews(text);
    ruleIds.push(...detectInjection(text, decoded, role));
    const joint = new JointScan(text);
    for (const d of DETECTORS) {
      if (d.toggle && !opts[d.toggle]) continue;
      if (d.test(text, joint) || (d.category === 'secret' && decoded.some((t) => d.test(t)))) ruleIds.push(d.id);
    }
  }
  return ruleIds;
}

/**
 * Runs every detector once on a short text, so that no governed call pays for their first run
 * (compiling the rules, the classifier's code paths): an API process calls it before it listens,
 * otherwise the first inspection would hold the event loop for every request arriving meanwhile.
 */
export function warmFirewall(): void {
  inspectAllDetectors(['Please ignore the previous draft; mail ops@example.com or call +1 555 0100 about key sk-test-123.']);
}

/** The result for a project's toggles from the all-detectors rule ids (a detector toggled off is dropped). */
function resultFor(allRuleIds: string[], opts: FirewallOptions): FirewallResult {
  const hits = new Set<FirewallCategory>();
  const ruleIds: string[] = [];
  for (const id of allRuleIds) {
    const d = DETECTOR_BY_ID.get(id);
    if (d?.toggle && !opts[d.toggle]) continue;
    hits.add(d ? d.category : 'prompt_injection');
    ruleIds.push(id);
  }
  const categories = ORDER.filter((c) => hits.has(c));
  return { detected: categories.length > 0, categories, ruleIds };
}

/** Results computed off the event loop by prepareInspection, per text list (and the items it held then). */
const prepared = new WeakMap<InspectableText[], { items: InspectableText[]; texts: (string | undefined)[]; ruleIds: string[] }>();
const textOf = (item: InspectableText) => (typeof item === 'string' ? item : item?.text);

/** The part of an item the detectors read (the first MAX_INSPECT_CHARS characters of its text). */
function inspectedPart(item: InspectableText): InspectableText {
  const t = textOf(item);
  if (typeof t !== 'string' || t.length <= MAX_INSPECT_CHARS) return item;
  return typeof item === 'string' ? t.slice(0, MAX_INSPECT_CHARS) : { ...item, text: t.slice(0, MAX_INSPECT_CHARS) };
}

function totalChars(texts: InspectableText[]): number {
  let n = 0;
  for (const item of texts) {
    const t = textOf(item);
    if (typeof t === 'string') n += Math.min(t.length, MAX_INSPECT_CHARS);
  }
  return n;
}

/**
 * Inspects a large text list (over OFFLOAD_THRESHOLD_CHARS in total) in a worker thread, so that a
 * later inspectText on the same list returns at once. Returns undefined (nothing to wait for) for
 * smaller lists, which inspectText handles synchronously. If the worker fails, nothing is stored and
 * inspectText inspects synchronously (same result, on the event loop).
 */
export function prepareInspection(texts: InspectableText[]): Promise<void> | undefined {
  if (!Array.isArray(texts) || totalChars(texts) <= OFFLOAD_THRESHOLD_CHARS || prepared.has(texts)) return undefined;
  const items = [...texts];
  // Only what the detectors read crosses to the worker: copying a body-limit text there would
  // hold the event loop for tens of milliseconds.
  return inspectInWorker(items.map(inspectedPart)).then(
    (ruleIds) => {
      prepared.set(texts, { items, texts: items.map(textOf), ruleIds });
    },
    () => undefined,
  );
}

/** Runs every enabled detector over all inspectable text (normalised, and with embedded encodings decoded). */
export function inspectText(texts: InspectableText[], opts: FirewallOptions = {}): FirewallResult {
  const p = prepared.get(texts);
  if (p && p.items.length === texts.length && p.items.every((item, i) => item === texts[i] && p.texts[i] === textOf(item))) return resultFor(p.ruleIds, opts);
  return resultFor(inspectAllDetectors(texts, opts), opts);
}

/**
 * The given secret/pii categories that the detectors still find in texts (normalized and decoded
 * views, as inspectText reads them): used on a redacted request, where any hit is a value the
 * redaction could not mask. Only those categories' detectors run (no injection rules, no classifier).
 * `clean` (RedactionResult.clean) holds texts the Redactor, built for the same categories and
 * options, scanned without finding a span: where normalisation leaves such a text as it is, its
 * normalized view is the text the detectors already found nothing in, and only its decoded views
 * are read.
 */
export function residualCategories(texts: InspectableText[], opts: FirewallOptions, categories: readonly FirewallCategory[], clean?: ReadonlySet<string>): FirewallCategory[] {
  const hits = new Set<FirewallCategory>();
  const detectors = DETECTORS.filter((d) => categories.includes(d.category) && (!d.toggle || opts[d.toggle]));
  for (const item of texts) {
    const raw = textOf(item);
    if (!raw || typeof raw !== 'string') continue;
    const text = baseView(raw.slice(0, MAX_INSPECT_CHARS));
    const scanned = text === raw && clean?.has(raw) === true;
    let decoded: string[] | null = null;
    const joint = new JointScan(text);
    for (const d of detectors) {
      if (hits.has(d.category)) continue;
      if (!scanned && d.test(text, joint)) hits.add(d.category);
      else if (d.category === 'secret' && (decoded ??= decodedViews(text)).some((t) => d.test(t))) hits.add(d.category);
    }
  }
  return ORDER.filter((c) => hits.has(c));
}

/** inspectText, in a worker thread for large texts (see prepareInspection). */
export async function inspectTextAsync(texts: InspectableText[], opts: FirewallOptions = {}): Promise<FirewallResult> {
  const p = prepareInspection(texts);
  if (p) await p;
  return inspectText(texts, opts);
}
