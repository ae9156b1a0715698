/**
 * The deepest nesting a request body may have. Deeper bodies are refused before anything walks
 * them: canonical JSON, zod and JSON.stringify recurse, and 10,000 levels overflow the stack (a 500
 * before this limit). Provider payloads (tool schemas included) stay far below it.
 */
export const MAX_JSON_DEPTH = 100;

/** Depth of a parsed JSON value (a scalar is 0), computed without recursion; stops past `limit`. */
export function jsonDepth(value: unknown, limit = MAX_JSON_DEPTH): number {
  let max = 0;
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length) {
    const [v, d] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    const depth = d + 1;
    if (depth > max) max = depth;
    if (max > limit) return max;
    for (const child of Array.isArray(v) ? v : Object.values(v as Record<string, unknown>)) {
      if (child !== null && typeof child === 'object') stack.push([child, depth]);
    }
  }
  return max;
}
