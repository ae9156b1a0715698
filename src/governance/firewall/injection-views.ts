/**
 * Injection signals that the words view cannot carry, and the extra views of short texts:
 * - instructions to drop prior instructions, and questions for "the password", in languages other
 *   than English: word signals for those written in Latin letters; base-view patterns, run only on
 *   texts holding such letters, for the others (the base view's confusable mapping turns Cyrillic
 *   and Greek words into mixed script, so those words go through the same mapping when the
 *   patterns are built);
 * - a text written in ROT13, reversed, or as HTML character references / `\xNN` / `\uNNNN` escapes
 *   (read back here, and scored by the word rules only: the classifier is not asked about text that
 *   was gibberish before decoding);
 * - an optimised adversarial suffix: a request followed by a tail of token debris (words glued with
 *   capitals inside them, bracket and quote runs, backslashes), as gradient-searched jailbreak
 *   suffixes read.
 * Every pattern is linear (bounded gaps, no nested unbounded quantifiers).
 */
import { baseView } from './normalize';

/**
 * "Ignore the previous instructions" and "what is the password" in languages written in Latin
 * letters (German, French, Spanish, Italian, Portuguese, Dutch): word signals over the words view
 * (lower case, diacritics stripped), matched in the same pass as the English ones.
 */
export const FOREIGN_WORD_SIGNALS: { id: string; weight: number; src: string }[] = [
  {
    id: 'inj.foreign_override',
    weight: 2,
    src: ` (?:(?:ignoriere|ignorieren|vergiss|vergessen) (?:sie )?(?:bitte )?(?:alle |die |deine |ihre |samtliche ){0,2}(?:vorherigen |bisherigen |obigen |vorigen |fruheren |ursprunglichen )?(?:anweisung|anweisungen|instruktionen|befehle|regeln|vorgaben)|(?:ignorez|ignore|oubliez|oublie) (?:toutes |tous )?(?:les|vos|tes) (?:instructions|consignes|directives|regles)|(?:ignora|ignorad|olvida|olvide|olvidad|dimentica|dimenticate|ignorate|esqueca|esquece) (?:todas |tutte |tutti )?(?:las|tus|sus|le|tue|as|suas|os) (?:instrucciones|indicaciones|reglas|istruzioni|regole|instrucoes|regras|ordenes)|(?:negeer|vergeet) (?:alle )?(?:de |je |uw )?(?:vorige |eerdere )?(?:instructies|regels)) `,
  },
  {
    id: 'inj.foreign_password',
    weight: 2,
    src: ` (?:quel est|donne moi|donnez moi|dis moi|dites moi|was ist|wie lautet|nenne mir|sag mir|qual e|quale e|dimmi|cual es|dime|dame|me diga) (?:[a-z]+ ){0,3}(?:mot de passe|passwort|kennwort|password|contrasena|senha) `,
  },
];

/** Letters of the scripts the patterns below read (Greek, Cyrillic, Devanagari, kana, CJK, Hangul): only texts holding one are matched. */
// eslint-disable-next-line no-misleading-character-class -- whole script ranges written as escapes, no combined character
export const NON_LATIN = /[\u0370-\u03ff\u0400-\u04ff\u0900-\u097f\u3040-\u30ff\u4e00-\u9fff\uac00-\ud7af]/;

/** A native-script word as the base view writes it (Cyrillic and Greek confusables mapped to Latin). */
const m = (word: string): string => baseView(word).toLowerCase();

/** The same two requests in Russian, Greek, Chinese, Japanese, Korean and Hindi, on the base view. */
export const FOREIGN_SCRIPT_SIGNALS: { id: string; weight: number; pattern: RegExp }[] = [
  {
    id: 'inj.foreign_override',
    weight: 2,
    pattern: new RegExp(
      [
        `(?:${m('игнорир')}|${m('забуд')}|${m('проигнорир')})[^\\s.]{0,6} (?:${m('все')} )?(?:${m('предыдущ')}|${m('прошл')}|${m('прежн')}|${m('свои')})[^\\s.]{0,4} (?:${m('инструкц')}|${m('указани')}|${m('правил')})`,
        `(?:${m('αγνοηστε')}|${m('αγνοησε')}|${m('ξεχαστε')}|${m('ξεχασε')}) (?:${m('ολες')} )?(?:${m('τις')} )?(?:${m('προηγουμενες')} )?${m('οδηγιες')}`,
        `(?:忽略|无视|無視|忘记|忘記)(?:之前|以前|先前|上面|上述|所有|你的|一切)[^。\\n]{0,6}(?:指令|指示|说明|說明|规则|規則)`,
        `(?:以前|これまで|上記|前)の(?:指示|命令|ルール)[^。\\n]{0,8}無視`,
        `(?:이전|앞의|모든)[^.\\n]{0,6}(?:지시|명령|지침)[^.\\n]{0,8}무시`,
        `(?:पिछले|पहले के|सभी)[^।\\n]{0,6}(?:निर्देश|आदेश)[^।\\n]{0,10}(?:अनदेखी|अनदेखा|नज़रअंदाज़|भूल)`,
      ].join('|'),
      'i',
    ),
  },
  { id: 'inj.foreign_password', weight: 2, pattern: /パスワード[^。\n]{0,12}(?:教えて|は何|を提供)|비밀번호[^.\n]{0,20}(?:알려|뭐|무엇|필요)|密码[^。\n]{0,8}(?:是什么|告诉)/ },
];

const MAX_ALT_VIEW_CHARS = 2048;
const rot13 = (s: string): string =>
  s.replace(/[A-Za-z]/g, (c) => {
    const b = c <= 'Z' ? 65 : 97;
    return String.fromCharCode(((c.charCodeAt(0) - b + 13) % 26) + b);
  });
const ENTITY = /&#(?:x([0-9a-f]{1,6})|([0-9]{1,7}));/gi;
const ESCAPE = /\\(?:x([0-9a-fA-F]{2})|u([0-9a-fA-F]{4}))/g;
const fromCode = (hex: string | undefined, dec: string | undefined): string => {
  const n = hex !== undefined ? parseInt(hex, 16) : parseInt(dec as string, 10);
  return n > 0 && n < 0x110000 ? String.fromCodePoint(n) : '';
};

/** Words an attack hidden in another reading carries; a reading is made only when one of them shows through in that reading. */
const KEY_WORDS = ['ignor', 'disregard', 'forget', 'instruction', 'prompt', 'previous', 'reveal', 'system', 'password', 'rules', 'jailbreak', 'mode'];
const reversed = (s: string): string => {
  let out = '';
  for (let i = s.length - 1; i >= 0; i--) out += s[i];
  return out;
};
export const ALT_VIEW_KEY_WORD = new RegExp(KEY_WORDS.join('|'), 'i');
const ROT13_KEY_WORD = new RegExp(KEY_WORDS.map(rot13).join('|'), 'i');
const REVERSED_KEY_WORD = new RegExp(KEY_WORDS.map(reversed).join('|'), 'i');

/**
 * Other readings of a short text that an attack can hide behind: ROT13, reversed, character
 * references or escapes decoded, each made only when a key word of an attack appears in it. Each is
 * scored by the word rules only (see detectInjection).
 */
export function alternateViews(base: string): string[] {
  if (base.length > MAX_ALT_VIEW_CHARS) return [];
  const views: string[] = [];
  if (ROT13_KEY_WORD.test(base)) views.push(rot13(base));
  if (REVERSED_KEY_WORD.test(base)) views.push(reversed(base));
  if (base.includes('&#')) views.push(base.replace(ENTITY, (_, h: string | undefined, d: string | undefined) => fromCode(h, d)));
  if (base.includes('\\x') || base.includes('\\u')) views.push(base.replace(ESCAPE, (_, x: string | undefined, u: string | undefined) => fromCode(x ?? u, undefined)));
  return views;
}

/** Token debris: a lower-case run followed by a capital inside one token (`similarlyNow`), or a run of 2+ bracket/quote/backslash marks. */
const DEBRIS = /[a-z]{2}[A-Z][A-Za-z]*|[()[\]{}"'`\\|=~^<>*#@!?]{2,}|\\/g;
/** A request at the start of the text (the harmful goal an adversarial suffix is attached to). */
const REQUEST_START = /^\s*(?:write|give|provide|create|generate|develop|design|explain|describe|list|draft|compose|outline|teach|tell|show|suggest|encourage|produce|offer|build|argue|publish|post|share)\b/i;

/** Prose: words, digits, spaces and sentence punctuation (no `_`, bracket or markup: no identifier or call). */
const PROSE = /^[A-Za-z0-9 ,.'’:;?!"%$&/-]+$/;

/**
 * An adversarial suffix: a one-paragraph request in plain prose followed by token debris. The prose
 * runs up to the first debris mark (at least 30 characters, no `_`, bracket or other code sign:
 * a one-line SQL or code request is not prose); from there, in the last 200 characters, at least 4
 * debris marks, or 3 with a backslash or a glued word among them.
 */
export function adversarialSuffix(base: string): boolean {
  if (base.length < 60 || base.length > 1200 || base.includes('\n') || !REQUEST_START.test(base)) return false;
  DEBRIS.lastIndex = 0;
  const first = DEBRIS.exec(base);
  if (!first || first.index < 30 || first.index < base.length - 200 || !PROSE.test(base.slice(0, first.index))) return false;
  const marks = base.slice(first.index).match(DEBRIS) ?? [];
  if (marks.length >= 4) return true;
  return marks.length >= 3 && marks.some((x) => x === '\\' || /[a-z][A-Z]/.test(x));
}
