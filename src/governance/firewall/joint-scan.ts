/**
 * The secret scan (secret-scan.ts) and the IBAN/national-id scan (pii-ids.ts) in one pass over a
 * text: both read every character, so when a caller runs both detectors on one text (inspection,
 * redaction, the check of a masked text) the text is read once. Each half finds what its own scan
 * finds, in the same order: the loop calls the same per-position functions at the same positions
 * (a token start for an id, skipping past an id found; every position for a secret).
 */
import { idAt } from './pii-ids';
import { SECRET_KIND, secretCandidate, secretsAt, type SecretHit } from './secret-scan';
import type { Span } from './span';

export interface JointHits {
  secrets: SecretHit[];
  ids: Span[];
}

// SECRET_KIND's bits 1 and 2, and two more for the id scan: 8, a letter or digit; 16, an upper-case letter or a digit (an id may start there).
const ALNUM = 8;
const ID_START = 16;
const KIND = new Uint8Array(256);
for (let c = 0; c < 256; c++) {
  const upperOrDigit = (c >= 48 && c <= 57) || (c >= 65 && c <= 90);
  KIND[c] = SECRET_KIND[c] | (upperOrDigit || (c >= 97 && c <= 122) ? ALNUM : 0) | (upperOrDigit ? ID_START : 0);
}

/** Both scans (first: each stops at its first hit; the pass ends when both have one). */
export function jointScan(text: string, first: boolean): JointHits {
  const secrets: SecretHit[] = [];
  const ids: Span[] = [];
  let secretsDone = false;
  let idsDone = false;
  let idFrom = 0;
  let prev = 0;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    const k = c < 256 ? KIND[c] : 0;
    if ((k & 3) !== 0 && !secretsDone && secretCandidate(text, i, c) && secretsAt(text, i, secrets, first)) {
      secretsDone = true;
      if (idsDone) break;
    }
    if ((k & ID_START) !== 0 && (prev & ALNUM) === 0 && i >= idFrom && !idsDone) {
      const id = idAt(text, i, c);
      if (id) {
        ids.push(id);
        idFrom = id.end;
        if (first) {
          idsDone = true;
          if (secretsDone) break;
        }
      }
    }
    prev = k;
  }
  return { secrets, ids };
}

/**
 * One text's joint scans, run when a detector first asks (the full scan for spans, the first-hit
 * scan for tests). A caller makes one per text it runs several detectors on, and drops it after.
 */
export class JointScan {
  private full?: JointHits;
  private firstHits?: JointHits;
  constructor(readonly text: string) {}
  all(): JointHits {
    return (this.full ??= jointScan(this.text, false));
  }
  any(): JointHits {
    return (this.firstHits ??= this.full ?? jointScan(this.text, true));
  }
}
