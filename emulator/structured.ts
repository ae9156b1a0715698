/**
 * What agents ask of a model beyond free text, answered deterministically: a JSON value that
 * validates against a requested schema (structured output), and tool calls whose arguments
 * validate against the tool's parameters. Each provider's request shape is read here; the
 * providers' handlers in server.ts render the answer in their wire format.
 *
 * Tool rule, the same on every provider: when tools are offered and the conversation does not end
 * with a tool result, the model calls one (the forced one, else the first) unless the request says
 * `none`; after a tool result it answers in text, so an agent's tool loop ends.
 */
import { hashHex } from './content';

type Schema = Record<string, unknown>;

const WORDS = ['amber', 'basalt', 'cedar', 'delta', 'ember', 'fjord', 'granite', 'harbor', 'indigo', 'juniper', 'kestrel', 'lumen'];

/**
 * A value valid against `schema` (JSON Schema, or Gemini's OpenAPI subset with upper-case types),
 * chosen from a hash of `seed` and the path so the same request gets the same value.
 */
export function valueFor(schema: unknown, seed: string, root: unknown = schema, path = '$', depth = 0): unknown {
  const s = (schema && typeof schema === 'object' ? schema : {}) as Schema;
  const pick = (n: number) => parseInt(hashHex(`${seed}:${path}`).slice(0, 8), 16) % Math.max(1, n);
  if (typeof s.$ref === 'string') return valueFor(resolveRef(root, s.$ref), seed, root, path, depth + 1);
  if (depth > 12) return null;
  if ('const' in s) return s.const;
  if (Array.isArray(s.enum) && s.enum.length) return s.enum[pick(s.enum.length)];
  for (const k of ['anyOf', 'oneOf', 'allOf'] as const) {
    const alts = s[k];
    if (Array.isArray(alts) && alts.length) {
      if (k === 'allOf') return Object.assign({}, ...alts.map((a, i) => valueFor(a, seed, root, `${path}&${i}`, depth + 1) as object));
      // The first alternative that is not null: a nullable field still gets a value of its type.
      const chosen = alts.find((a) => (a as Schema)?.type !== 'null') ?? alts[0];
      return valueFor(chosen, seed, root, path, depth + 1);
    }
  }
  let type = s.type;
  if (Array.isArray(type)) type = type.find((t) => t !== 'null') ?? 'null';
  type = typeof type === 'string' ? type.toLowerCase() : s.properties ? 'object' : s.items ? 'array' : 'string';
  switch (type) {
    case 'object': {
      const props = (s.properties ?? {}) as Record<string, unknown>;
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(props)) out[k] = valueFor(v, seed, root, `${path}.${k}`, depth + 1);
      return out;
    }
    case 'array': {
      const min = typeof s.minItems === 'number' ? s.minItems : 1;
      const max = typeof s.maxItems === 'number' ? s.maxItems : Math.max(min, 2);
      const n = Math.min(max, Math.max(min, 2));
      return Array.from({ length: n }, (_, i) => valueFor(s.items, seed, root, `${path}[${i}]`, depth + 1));
    }
    case 'integer':
    case 'number': {
      const lo = typeof s.minimum === 'number' ? s.minimum : typeof s.exclusiveMinimum === 'number' ? s.exclusiveMinimum + 1 : 0;
      // Unbounded numbers stay small, as a model's usually are: a schema that a client trimmed of its
      // bounds (SDKs move them out of strict schemas and check them on the answer) still passes.
      const hi = typeof s.maximum === 'number' ? s.maximum : typeof s.exclusiveMaximum === 'number' ? s.exclusiveMaximum - 1 : lo + 10;
      return Math.floor(lo + pick(Math.max(1, Math.floor(hi - lo) + 1)));
    }
    case 'boolean':
      return pick(2) === 1;
    case 'null':
      return null;
    default:
      return stringFor(s, seed, path, pick);
  }
}

function stringFor(s: Schema, seed: string, path: string, pick: (n: number) => number): string {
  switch (s.format) {
    case 'date-time':
      return '2026-01-01T00:00:00Z';
    case 'date':
      return '2026-01-01';
    case 'email':
      return 'someone@example.com';
    case 'uri':
      return 'https://example.com/';
    case 'uuid':
      return `${hashHex(seed).slice(0, 8)}-0000-4000-8000-${hashHex(path).slice(0, 12)}`;
  }
  const min = typeof s.minLength === 'number' ? s.minLength : 1;
  const max = typeof s.maxLength === 'number' ? s.maxLength : 64;
  let out = WORDS[pick(WORDS.length)];
  while (out.length < min) out += ` ${WORDS[(out.length + pick(WORDS.length)) % WORDS.length]}`;
  return out.slice(0, max);
}

function resolveRef(root: unknown, ref: string): unknown {
  if (!ref.startsWith('#/')) return {};
  let node: unknown = root;
  for (const part of ref.slice(2).split('/')) node = (node as Record<string, unknown> | undefined)?.[part.replace(/~1/g, '/').replace(/~0/g, '~')];
  return node ?? {};
}

/** A tool the model can call: its name and its parameters' schema. */
export interface ToolSpec {
  name: string;
  parameters: unknown;
}

/** The tool call an OpenAI-shaped chat request (openai, deepseek, mistral) asks for, or null for text. */
export function openaiToolCall(b: Record<string, any>): ToolSpec | null {
  const tools: ToolSpec[] = (Array.isArray(b.tools) ? b.tools : [])
    .filter((t: any) => t?.type === 'function' && typeof t.function?.name === 'string')
    .map((t: any) => ({ name: t.function.name, parameters: t.function.parameters ?? { type: 'object', properties: {} } }));
  const messages = Array.isArray(b.messages) ? b.messages : [];
  if (!tools.length || b.tool_choice === 'none' || messages[messages.length - 1]?.role === 'tool') return null;
  const forced = typeof b.tool_choice === 'object' ? b.tool_choice?.function?.name : undefined;
  return tools.find((t) => t.name === forced) ?? tools[0];
}

/** The JSON schema an OpenAI-shaped request asks the answer to follow (`response_format`), `{}` for any JSON object, or null for text. */
export function openaiResponseSchema(b: Record<string, any>): unknown {
  const f = b.response_format;
  if (f?.type === 'json_schema') return f.json_schema?.schema ?? {};
  if (f?.type === 'json_object') return { type: 'object', properties: { answer: { type: 'string' } } };
  return null;
}

/** The same for the Responses API (`text.format`). */
export function responsesSchema(b: Record<string, any>): unknown {
  const f = b.text?.format;
  if (f?.type === 'json_schema') return f.schema ?? {};
  if (f?.type === 'json_object') return { type: 'object', properties: { answer: { type: 'string' } } };
  return null;
}

/**
 * The tool call a Responses API request asks for, or null for text: its tools are flat
 * (`{type: "function", name, parameters}`), a forced one is `{type: "function", name}`, and a tool
 * result is a `function_call_output` input item.
 */
export function responsesToolCall(b: Record<string, any>): ToolSpec | null {
  const tools: ToolSpec[] = (Array.isArray(b.tools) ? b.tools : [])
    .filter((t: any) => t?.type === 'function' && typeof t.name === 'string')
    .map((t: any) => ({ name: t.name, parameters: t.parameters ?? { type: 'object', properties: {} } }));
  const input = Array.isArray(b.input) ? b.input : [];
  if (!tools.length || b.tool_choice === 'none' || input[input.length - 1]?.type === 'function_call_output') return null;
  const forced = typeof b.tool_choice === 'object' && b.tool_choice?.type === 'function' ? b.tool_choice.name : undefined;
  return tools.find((t) => t.name === forced) ?? tools[0];
}

/** The tool call an Anthropic Messages request asks for, or null for text. */
export function anthropicToolCall(b: Record<string, any>): ToolSpec | null {
  const tools: ToolSpec[] = (Array.isArray(b.tools) ? b.tools : [])
    .filter((t: any) => typeof t?.name === 'string' && t.input_schema)
    .map((t: any) => ({ name: t.name, parameters: t.input_schema }));
  const messages = Array.isArray(b.messages) ? b.messages : [];
  const last = messages[messages.length - 1];
  const afterResult = last?.role === 'user' && Array.isArray(last.content) && last.content.some((c: any) => c?.type === 'tool_result');
  if (!tools.length || b.tool_choice?.type === 'none' || afterResult) return null;
  const forced = b.tool_choice?.type === 'tool' ? b.tool_choice.name : undefined;
  return tools.find((t) => t.name === forced) ?? tools[0];
}

/** The schema an Anthropic Messages request asks the answer to follow (`output_config.format`), or null for text. */
export function anthropicResponseSchema(b: Record<string, any>): unknown {
  const f = b.output_config?.format ?? b.output_format;
  return f?.type === 'json_schema' ? (f.schema ?? {}) : null;
}

/** The function call a Gemini request asks for, or null for text. */
export function googleToolCall(b: Record<string, any>): ToolSpec | null {
  const tools: ToolSpec[] = (Array.isArray(b.tools) ? b.tools : []).flatMap((t: any) =>
    (Array.isArray(t?.functionDeclarations) ? t.functionDeclarations : [])
      .filter((f: any) => typeof f?.name === 'string')
      .map((f: any) => ({ name: f.name, parameters: f.parametersJsonSchema ?? f.parameters ?? { type: 'object', properties: {} } })),
  );
  const cfg = b.toolConfig?.functionCallingConfig ?? {};
  const contents = Array.isArray(b.contents) ? b.contents : [];
  const last = contents[contents.length - 1];
  const afterResult = Array.isArray(last?.parts) && last.parts.some((p: any) => p?.functionResponse);
  if (!tools.length || String(cfg.mode ?? '').toUpperCase() === 'NONE' || afterResult) return null;
  const allowed: string[] = Array.isArray(cfg.allowedFunctionNames) ? cfg.allowedFunctionNames : [];
  return tools.find((t) => allowed.includes(t.name)) ?? tools[0];
}

/** The schema a Gemini request asks the answer to follow (`responseSchema` / `responseJsonSchema`), or null for text. */
export function googleResponseSchema(b: Record<string, any>): unknown {
  const g = b.generationConfig ?? {};
  if (g.responseJsonSchema) return g.responseJsonSchema;
  if (g.responseSchema) return g.responseSchema;
  if (g.responseMimeType === 'application/json') return { type: 'object', properties: { answer: { type: 'string' } } };
  return null;
}

/** A tool call's id in each provider's style, stable for a request. */
export function toolCallId(prefix: string, seed: string): string {
  return `${prefix}${hashHex(`tool:${seed}`).slice(0, 24)}`;
}
