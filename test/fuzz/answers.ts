/**
 * What every fuzzed answer must be: never a 500, and every error in the documented shape — the
 * spec's `{"error": {"code", "message", "details"}}`, or the provider's own error shape on
 * /v1/proxy/{provider} (src/proxy/native-errors.ts).
 */
export interface Answer {
  method: string;
  path: string;
  status: number;
  text: string;
  bodySummary: string;
}

function json(text: string): any {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

const isString = (v: unknown) => typeof v === 'string' && v.length > 0;
const isPlainObject = (v: unknown) => v !== null && typeof v === 'object' && !Array.isArray(v);

/** The problem with an error answer's body, or null when it has the documented shape. */
export function errorShapeProblem(path: string, status: number, text: string): string | null {
  const body = json(text);
  if (body === undefined) return 'error body is not JSON';
  const provider = /^\/v1\/proxy\/([a-z]+)\//.exec(path)?.[1];
  switch (provider) {
    case undefined:
      return isPlainObject(body?.error) && isString(body.error.code) && isString(body.error.message) && isPlainObject(body.error.details)
        ? null
        : 'not {"error": {"code", "message", "details"}}';
    case 'openai':
    case 'deepseek':
      return isPlainObject(body?.error) && isString(body.error.message) ? null : 'not an OpenAI-style {"error": {"message", ...}}';
    case 'mistral':
      return (isString(body?.message) && (body.object === 'error' || isString(body.type))) || (isPlainObject(body?.error) && isString(body.error.message))
        ? null
        : 'not a Mistral-style error';
    case 'anthropic':
      return body?.type === 'error' && isPlainObject(body.error) && isString(body.error.type) && isString(body.error.message) ? null : 'not {"type": "error", "error": {"type", "message"}}';
    case 'google':
      return isPlainObject(body?.error) && body.error.code === status && isString(body.error.message) && isString(body.error.status) ? null : 'not {"error": {"code", "message", "status"}}';
    default:
      return `unknown provider ${provider}`;
  }
}

/** The answer's problems (empty when it is acceptable). */
export function answerProblems(a: Answer): string[] {
  const problems: string[] = [];
  if (a.status === 500) problems.push('answered 500');
  if (a.status >= 400) {
    const shape = errorShapeProblem(a.path, a.status, a.text);
    if (shape) problems.push(`${a.status} ${shape}`);
  }
  return problems;
}

export function describeAnswer(a: Answer): string {
  return `${a.method} ${a.path.slice(0, 200)} with ${a.bodySummary} → ${a.status} ${a.text.slice(0, 400)}`;
}
