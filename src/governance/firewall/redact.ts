/**
 * Redaction: the `redact` action of the firewall policy (`firewall.actions`). The spans the secret
 * and personal-data detectors find in the raw text are replaced with stable placeholders
 * (`[REDACTED_EMAIL_1]`, `[REDACTED_SECRET_2]`, ...) before the provider sees the request. One
 * `Redactor` serves one call: the same value gets the same placeholder in every text of the call.
 * The original values are kept only in the Redactor's map, in memory, for the call's lifetime:
 * nothing here logs, stores or returns them.
 *
 * Used by both surfaces: `/v1/executions` and `/v1/execute` (normalized messages and inputs) and the
 * proxies (every string value of the native JSON body, re-serialized). Governance (evaluate.ts)
 * checks what a surface would dispatch with `residualCategories`: a value the detectors still find
 * (hidden by invisible characters, confusables or an encoding, which only the normalized views
 * reveal) cannot be masked, and the call is blocked instead.
 */
import { DETECTORS, type Detector, type FirewallCategory, type Span } from './detectors';
import { JointScan } from './joint-scan';
import type { InspectableText } from './roles';

export type RedactCounts = Partial<Record<FirewallCategory, number>>;

/** What a surface reports after masking its request: the texts it would dispatch and how many values were masked per category. */
export interface RedactionResult {
  texts: InspectableText[];
  counts: RedactCounts;
  /** Redactor.clean: texts the masking scanned and found nothing in (residualCategories skips their rescan). */
  clean?: ReadonlySet<string>;
}

/** The detector toggles a redaction honours (as the inspection does). */
export interface RedactOptions {
  detect_pii_email?: boolean;
  detect_pii_phone?: boolean;
}

/** The categories redaction can mask: the ones whose detectors find spans. Injection has no span to mask. */
export const REDACTABLE: readonly FirewallCategory[] = ['secret', 'pii'];

/** JSON keys and values holding binary payloads (base64 images and audio), never prompt text: left as they are. */
const BINARY_KEYS = new Set(['data', 'b64_json']);
const isBinaryValue = (s: string) => s.startsWith('data:');

interface Found extends Span {
  category: FirewallCategory;
}

export class Redactor {
  private readonly detectors: Detector[];
  private readonly placeholders = new Map<string, string>();
  private readonly next = new Map<string, number>();
  readonly counts: RedactCounts = {};
  /**
   * The texts this Redactor scanned and found no span in (so returned as they were). Every
   * detector's `test` holds exactly when its `spans` finds one, so governance's check of such a text
   * need not run these detectors on it again where normalisation leaves it unchanged
   * (residualCategories).
   */
  readonly clean = new Set<string>();

  constructor(categories: readonly FirewallCategory[], opts: RedactOptions = {}) {
    this.detectors = DETECTORS.filter((d) => categories.includes(d.category) && REDACTABLE.includes(d.category) && (!d.toggle || opts[d.toggle]));
  }

  /** The text with every span found replaced by its placeholder (the same string when nothing was found). */
  text(s: string): string {
    if (!s || this.detectors.length === 0) return s;
    let found: Found[] | null = null;
    const joint = new JointScan(s);
    for (const d of this.detectors) {
      const spans = d.spans(s, joint);
      if (spans.length === 0) continue;
      found ??= [];
      for (const sp of spans) found.push({ ...sp, category: d.category });
    }
    if (!found) {
      this.clean.add(s);
      return s;
    }
    // Earliest first, the longer of two spans at one start; overlapping spans merge into one
    // masked span (a value is never left partly visible).
    found.sort((a, b) => a.start - b.start || b.end - a.end);
    const merged: Found[] = [];
    for (const f of found) {
      const last = merged[merged.length - 1];
      if (last && f.start < last.end) {
        last.end = Math.max(last.end, f.end);
        // A secret inside personal data (a password before '@host' reads as an e-mail) is named a secret.
        if (f.category === 'secret') Object.assign(last, { kind: f.kind, category: f.category });
      } else merged.push({ ...f });
    }
    let out = '';
    let at = 0;
    for (const f of merged) {
      out += s.slice(at, f.start) + this.placeholder(f.kind, s.slice(f.start, f.end), f.category);
      at = f.end;
    }
    return out + s.slice(at);
  }

  /** Every string value of a JSON value masked (keys and binary payloads are left as they are); a new value, the input is not changed. */
  json(value: unknown, key?: string): unknown {
    if (typeof value === 'string') return key !== undefined && BINARY_KEYS.has(key) ? value : isBinaryValue(value) ? value : this.text(value);
    if (Array.isArray(value)) return value.map((v) => this.json(v));
    if (value !== null && typeof value === 'object') {
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(value as Record<string, unknown>)) out[k] = this.json(v, k);
      return out;
    }
    return value;
  }

  /** A role-tagged inspectable item, masked. */
  item(item: InspectableText): InspectableText {
    return typeof item === 'string' ? this.text(item) : { ...item, text: this.text(item.text) };
  }

  private placeholder(kind: string, value: string, category: FirewallCategory): string {
    this.counts[category] = (this.counts[category] ?? 0) + 1;
    const key = `${kind}\u0000${value}`;
    let p = this.placeholders.get(key);
    if (!p) {
      const n = (this.next.get(kind) ?? 0) + 1;
      this.next.set(kind, n);
      p = `[REDACTED_${kind}_${n}]`;
      this.placeholders.set(key, p);
    }
    return p;
  }
}

/** The messages and text inputs of a normalized request, masked (a copy; other fields as they are). */
export function maskRequest<T extends { messages?: { content: string }[]; inputs?: { type: string; text?: string }[] }>(r: Redactor, req: T): T {
  const out = { ...req };
  if (req.messages) out.messages = req.messages.map((m) => ({ ...m, content: r.text(m.content) }));
  if (req.inputs) out.inputs = req.inputs.map((i) => (i.type === 'text' && typeof i.text === 'string' ? { ...i, text: r.text(i.text) } : i));
  return out;
}

/**
 * A surface's side of redaction: `mask` builds the masked copy of the surface's request with a
 * fresh Redactor and returns it with the texts it would dispatch (null: this request cannot be
 * masked, e.g. a multipart body). `redact` is what governance calls (GovernanceRequest.redact);
 * `masked` hands dispatch the copy governance checked. Governance may decide twice (optimistic, then
 * under the lock): the decision that stands is the last one, so the last copy is the one kept.
 */
export function surfaceRedaction<T>(mask: (r: Redactor) => { copy: T; texts: InspectableText[] } | null) {
  let last: { categories: string; copy: T } | null = null;
  return {
    redact: (categories: FirewallCategory[], opts: RedactOptions): RedactionResult | null => {
      const r = new Redactor(categories, opts);
      const m = mask(r);
      last = m ? { categories: categories.join(','), copy: m.copy } : null;
      return m ? { texts: m.texts, counts: r.counts, clean: r.clean } : null;
    },
    /** The masked copy for the categories governance redacted; throws rather than let an unmasked request be dispatched. */
    masked: (categories: readonly string[]): T => {
      if (!last || last.categories !== categories.join(',')) throw new Error('prompt firewall: no masked request for the categories governance redacted');
      return last.copy;
    },
  };
}

/** The proxies' `x-svc-firewall` response header for an allowed call (`redacted=pii; flagged=secret`), or null. */
export function firewallHeader(fw: { redacted: readonly string[]; flagged: readonly string[] } | undefined): string | null {
  if (!fw) return null;
  const parts = [];
  if (fw.redacted.length) parts.push(`redacted=${fw.redacted.join(',')}`);
  if (fw.flagged.length) parts.push(`flagged=${fw.flagged.join(',')}`);
  return parts.length ? parts.join('; ') : null;
}
