/** Secrets from public repositories: the examples of Nosey Parker's rules, inside the synthetic sentences. */
import { git, gitLs } from '../firewall-snapshots';
import { makeCase, sha, type EvalCase } from './cases';
import { SECRET_CONTEXTS } from './synthetic-secrets';

/**
 * Nosey Parker's rules (Apache-2.0): each rule's `examples` in YAML. Its `negative_examples` are not
 * used: they are strings one rule must not match, often real-looking credentials of another kind.
 */
interface NpRule {
  id: string;
  examples: string[];
  negative: string[];
}
function noseyParkerRules(): NpRule[] {
  const rules: NpRule[] = [];
  const files = gitLs('praetorian-inc+noseyparker', 'crates/noseyparker/data/default/builtin/rules').filter((f) => f.endsWith('.yml'));
  for (const f of files) {
    const lines = (git('praetorian-inc+noseyparker', f) ?? '').split('\n');
    let rule: NpRule | null = null;
    let list: string[] | null = null;
    for (let i = 0; i < lines.length; i++) {
      const l = lines[i];
      const id = /^ {2}id: (\S+)/.exec(l);
      if (/^- name: /.test(l)) {
        rule = { id: '', examples: [], negative: [] };
        rules.push(rule);
        list = null;
      } else if (id && rule) rule.id = id[1];
      else if (/^ {2}examples:/.test(l) && rule) list = rule.examples;
      else if (/^ {2}negative_examples:/.test(l) && rule) list = rule.negative;
      else if (/^ {2}[a-z_]+:/.test(l)) list = null;
      else if (list) {
        const item = /^ {2}- (.*)$/.exec(l);
        if (!item) continue;
        const v = item[1];
        if (v === '|' || v === '|-' || v === '>') {
          const body: string[] = [];
          while (i + 1 < lines.length && (/^ {4}/.test(lines[i + 1]) || lines[i + 1] === '')) body.push(lines[++i].slice(4));
          list.push(body.join('\n').trim());
        } else if (/^'.*'$/.test(v)) list.push(v.slice(1, -1).replace(/''/g, "'"));
        else if (/^".*"$/.test(v)) {
          // YAML double-quoted strings may hold raw tabs, which JSON.parse refuses.
          // eslint-disable-next-line no-control-regex
          list.push(JSON.parse(v.replace(/[\u0000-\u001f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)) as string);
        } else list.push(v);
      }
    }
  }
  return rules.filter((r) => r.id);
}

export function publicSecrets(): EvalCase[] {
  const out: EvalCase[] = [];
  for (const r of noseyParkerRules()) {
    for (const e of r.examples) {
      const ctx = SECRET_CONTEXTS[parseInt(sha(e).slice(0, 4), 16) % SECRET_CONTEXTS.length];
      out.push(makeCase('secret', 'noseyparker-examples', ctx(e), { kind: r.id, group: `np:${r.id}` }));
    }
  }
  return out;
}
