/**
 * Prompt-firewall detectors. These rules are internal: no route exposes them, and events and
 * decisions name only the category (`prompt_injection`, `secret`, `pii`).
 */

export type FirewallCategory = 'prompt_injection' | 'secret' | 'pii';

export interface Detector {
  /** Internal rule id (logs/tests only, never in a response or event). */
  id: string;
  category: FirewallCategory;
  /** Only run when this project toggle is on. */
  toggle?: 'detect_pii_email' | 'detect_pii_phone';
  test(text: string): boolean;
}

const re = (id: string, category: FirewallCategory, pattern: RegExp, toggle?: Detector['toggle']): Detector => ({
  id,
  category,
  toggle,
  test: (t) => {
    pattern.lastIndex = 0;
    return pattern.test(t);
  },
});

function luhn(digits: string): boolean {
  let sum = 0;
  let dbl = false;
  for (let i = digits.length - 1; i >= 0; i--) {
    let n = digits.charCodeAt(i) - 48;
    if (dbl) {
      n *= 2;
      if (n > 9) n -= 9;
    }
    sum += n;
    dbl = !dbl;
  }
  return sum % 10 === 0;
}

function ibanValid(raw: string): boolean {
  const s = raw.replace(/\s+/g, '').toUpperCase();
  if (s.length < 15 || s.length > 34) return false;
  const rearranged = s.slice(4) + s.slice(0, 4);
  let rem = 0;
  for (const ch of rearranged) {
    const v = /[0-9]/.test(ch) ? ch : String(ch.charCodeAt(0) - 55);
    for (const d of v) rem = (rem * 10 + (d.charCodeAt(0) - 48)) % 97;
  }
  return rem === 1;
}

const INJ_OBJECT = '(?:instructions?|prompts?|rules|directions|directives|guidelines|guardrails|context|messages|system prompt|programming)';
const INJ_PRIOR = '(?:previous|prior|above|earlier|preceding|original|initial|existing|all|any|your|the|these|those|system)';

const injection: Detector[] = [
  re('inj.ignore_prior', 'prompt_injection', new RegExp(`\\b(?:ignore|disregard|forget|override|skip|drop|abandon|bypass)\\s+(?:(?:all|any|of|the|your|my|these|those|everything)\\s+){0,3}${INJ_PRIOR}\\s+(?:\\w+\\s+){0,2}${INJ_OBJECT}`, 'i')),
  re('inj.forget_everything', 'prompt_injection', /\b(?:forget|disregard|ignore)\s+(?:everything|all)\s+(?:you\s+(?:were|have\s+been)\s+told|(?:said|written)\s+(?:above|before))/i),
  re('inj.dan', 'prompt_injection', /\b(?:you\s+are\s+(?:now\s+)?DAN\b|do\s+anything\s+now\b|jailbroken\b|jailbreak\s+mode)/i),
  re('inj.mode_switch', 'prompt_injection', /\b(?:enable|enter|activate|switch\s+to|you\s+are\s+(?:now\s+)?in)\s+(?:developer|dev|god|debug|unrestricted|admin|sudo|DAN)\s+mode\b/i),
  re('inj.you_are_now', 'prompt_injection', /\byou\s+are\s+now\s+(?:an?\s+)?(?:unrestricted|unfiltered|uncensored|evil|rogue|unaligned)\b/i),
  re('inj.no_restrictions', 'prompt_injection', /\b(?:pretend|act\s+as\s+if|imagine|roleplay\s+that)\b[^.\n]{0,60}\b(?:no|without|free\s+(?:of|from))\s+(?:any\s+)?(?:restrictions|rules|limits|filters|guidelines|safety|content\s+polic(?:y|ies))/i),
  re('inj.reveal_system', 'prompt_injection', /\b(?:reveal|print|show|output|repeat|leak|dump|display|tell\s+me|give\s+me|echo)\s+(?:me\s+)?(?:your|the)\s+(?:full\s+|entire\s+|exact\s+|hidden\s+|secret\s+|original\s+|initial\s+)*(?:system\s+prompt|system\s+message|hidden\s+instructions|initial\s+instructions|developer\s+message|pre-?prompt)/i),
  re('inj.bypass_safety', 'prompt_injection', /\b(?:bypass|disable|turn\s+off|deactivate|circumvent|ignore)\s+(?:all\s+|your\s+|the\s+|any\s+)*(?:safety|content|moderation|ethical)?\s*(?:filters?|guardrails|safeguards|restrictions|safety\s+(?:checks|rules|protocols)|content\s+polic(?:y|ies))\b/i),
  re('inj.new_instructions', 'prompt_injection', /(?:^|\n)\s*(?:#+\s*)?(?:new|updated|real|actual)\s+(?:system\s+)?instructions\s*:/i),
  re('inj.fake_role_tag', 'prompt_injection', /(?:<\/?\s*(?:system|im_start|im_end)\s*>|\[\/?(?:SYSTEM|INST)\]|<\|im_start\|>\s*system|^\s*system\s*:\s*you\s+(?:must|will|are))/im),
  re('inj.from_now_on', 'prompt_injection', /\bfrom\s+now\s+on,?\s+you\s+(?:will|must|shall)\s+(?:ignore|not\s+follow|answer\s+without|disregard|obey\s+only)/i),
];

const secrets: Detector[] = [
  re('sec.aws_access_key', 'secret', /\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}\b/),
  re('sec.aws_secret', 'secret', /\baws_?secret_?(?:access_?)?key\b\s*[:=]\s*["']?[A-Za-z0-9/+=]{40}\b/i),
  re('sec.anthropic', 'secret', /\bsk-ant-(?:api|admin)\d{2}-[A-Za-z0-9_-]{20,}/),
  re('sec.openai', 'secret', /\bsk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_-]{20,}\b/),
  re('sec.google_api_key', 'secret', /\bAIza[0-9A-Za-z_-]{35}\b/),
  re('sec.github', 'secret', /\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})\b/),
  re('sec.gitlab', 'secret', /\bglpat-[A-Za-z0-9_-]{20,}\b/),
  re('sec.slack', 'secret', /\bxox[abposr]-[A-Za-z0-9-]{10,}\b/),
  re('sec.stripe', 'secret', /\b(?:sk|rk)_live_[A-Za-z0-9]{20,}\b/),
  re('sec.private_key', 'secret', /-----BEGIN\s+(?:RSA\s+|EC\s+|DSA\s+|OPENSSH\s+|ENCRYPTED\s+|PGP\s+)?PRIVATE\s+KEY(?:\s+BLOCK)?-----/),
  re('sec.jwt', 'secret', /\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/),
  re('sec.bearer', 'secret', /\bBearer\s+(?=[A-Za-z0-9._~+/-]*\d)(?=[A-Za-z0-9._~+/-]*[A-Za-z])[A-Za-z0-9._~+/-]{24,}=*/),
];

const CARD_CANDIDATE = /\b(?:\d[ -]?){12,18}\d\b/g;
const cardDetector: Detector = {
  id: 'pii.card',
  category: 'pii',
  test: (text) => {
    for (const m of text.matchAll(CARD_CANDIDATE)) {
      const digits = m[0].replace(/[ -]/g, '');
      if (digits.length < 13 || digits.length > 19) continue;
      if (!/^(?:4|5[1-5]|2[2-7]|3[47]|3[0689]|6(?:011|5|4[4-9]|22)|35)/.test(digits)) continue;
      if (/^(\d)\1+$/.test(digits)) continue;
      if (luhn(digits)) return true;
    }
    return false;
  },
};

const IBAN_CANDIDATE = /\b[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]{4}){2,7}(?:[ ]?[A-Z0-9]{1,4})?\b/g;
const ibanDetector: Detector = {
  id: 'pii.iban',
  category: 'pii',
  test: (text) => [...text.matchAll(IBAN_CANDIDATE)].some((m) => ibanValid(m[0])),
};

const pii: Detector[] = [
  cardDetector,
  // US SSN (dashed; area 000/666/9xx, group 00 and serial 0000 are never issued).
  re('pii.us_ssn', 'pii', /\b(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}\b/),
  re('pii.us_ssn_labeled', 'pii', /\b(?:SSN|social\s+security(?:\s+number)?)\b[^0-9\n]{0,20}(?!000|666|9\d\d)\d{3}\s?(?!00)\d{2}\s?(?!0000)\d{4}\b/i),
  // UK National Insurance number.
  re('pii.uk_nino', 'pii', /\b(?!BG|GB|NK|KN|TN|NT|ZZ)[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z]\s?\d{2}\s?\d{2}\s?\d{2}\s?[A-D]\b/),
  // Canadian SIN with a label (digits alone collide with phone numbers).
  re('pii.ca_sin', 'pii', /\b(?:SIN|social\s+insurance(?:\s+number)?)\b[^0-9\n]{0,20}\d{3}[- ]?\d{3}[- ]?\d{3}\b/i),
  // Indian Aadhaar with a label.
  re('pii.in_aadhaar', 'pii', /\baadhaar\b[^0-9\n]{0,20}[2-9]\d{3}\s?\d{4}\s?\d{4}\b/i),
  // Passport numbers only with a label.
  re('pii.passport', 'pii', /\bpassport\s+(?:no\.?|number|#)\s*[:#]?\s*[A-Z0-9]{6,9}\b/i),
  ibanDetector,
  re('pii.email', 'pii', /\b[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b/, 'detect_pii_email'),
  re('pii.phone', 'pii', /(?:\+\d{1,3}[ .-]?)?(?:\(\d{3}\)\s?|\b\d{3}[ .-])\d{3}[ .-]\d{4}\b|\+\d{10,15}\b/, 'detect_pii_phone'),
];

export const DETECTORS: readonly Detector[] = [...injection, ...secrets, ...pii];
