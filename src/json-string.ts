/** Characters JSON.stringify escapes: quote, backslash, controls, and lone surrogates (any surrogate here). */
// eslint-disable-next-line no-control-regex -- the control characters are what JSON escapes
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

/**
 * The JSON text of a string without its quotes, as JSON.stringify (and RFC 8785) writes it. Text
 * with nothing to escape (most of a long prompt) is its own JSON text: returned as it is, with no
 * copy made (a slice of the body limit's prompt escaped whole left megabytes of garbage behind).
 */
export function jsonStringText(s: string): string {
  return NEEDS_ESCAPE.test(s) ? JSON.stringify(s).slice(1, -1) : s;
}
