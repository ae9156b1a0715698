import { inspectText } from './index';

export interface CorpusItem {
  label: 'malicious' | 'benign';
  category?: string;
  requires?: 'detect_pii_email' | 'detect_pii_phone';
  text: string;
}

export interface CorpusReport {
  malicious: number;
  benign: number;
  detected: number;
  detectedWithCategory: number;
  falsePositives: number;
  detectionRate: number;
  falsePositiveRate: number;
  missed: string[];
  falselyFlagged: string[];
}

/** Runs the firewall with every toggle on over the corpus. */
export function evaluateCorpus(items: CorpusItem[]): CorpusReport {
  const opts = { detect_pii_email: true, detect_pii_phone: true };
  const mal = items.filter((i) => i.label === 'malicious');
  const ben = items.filter((i) => i.label === 'benign');
  const missed: string[] = [];
  let detected = 0;
  let detectedWithCategory = 0;
  for (const i of mal) {
    const r = inspectText([i.text], opts);
    if (r.detected) {
      detected += 1;
      if (!i.category || r.categories.includes(i.category as never)) detectedWithCategory += 1;
    } else missed.push(i.text);
  }
  const falselyFlagged = ben.filter((i) => inspectText([i.text], opts).detected).map((i) => i.text);
  return {
    malicious: mal.length,
    benign: ben.length,
    detected,
    detectedWithCategory,
    falsePositives: falselyFlagged.length,
    detectionRate: mal.length ? detected / mal.length : 0,
    falsePositiveRate: ben.length ? falselyFlagged.length / ben.length : 0,
    missed,
    falselyFlagged,
  };
}
