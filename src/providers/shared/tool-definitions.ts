/**
 * The tool definitions a request offers the model, as the provider sees them: text for the prompt
 * firewall and tokens for the pre-dispatch estimate. Every provider shape keeps them in `tools`
 * (OpenAI chat and Responses, Anthropic, Gemini's `functionDeclarations` groups) or in OpenAI's
 * older `functions`, in the native body or in a normalized request's provider options alike, so
 * one reader serves them all.
 */
import { countTokens } from '../../pricing/tokenizer';
import type { InspectableText } from '../../governance/firewall/roles';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);

/** The tool definitions of a native body or of a target's provider options (`tools`, then `functions`); empty when none. */
export function toolDefinitions(body: unknown): unknown[] {
  if (!isObj(body)) return [];
  return [...(Array.isArray(body.tools) ? body.tools : []), ...(Array.isArray(body.functions) ? body.functions : [])];
}

/** Keys whose object value is a JSON schema the model reads (parameters, input, custom tool format, Gemini's response schema). */
const SCHEMA_KEYS = ['parameters', 'parametersJsonSchema', 'parameters_json_schema', 'input_schema', 'format', 'response', 'responseJsonSchema', 'response_json_schema'];
/** Keys of a schema node holding prose for the model. */
const PROSE_KEYS = new Set(['description', 'title']);
/** A schema nested deeper than this carries nothing more a model reads; the body's own depth limit applies first. */
const MAX_SCHEMA_DEPTH = 64;

function schemaProse(node: unknown, out: string[], depth: number): void {
  if (depth > MAX_SCHEMA_DEPTH) return;
  if (Array.isArray(node)) {
    for (const v of node) schemaProse(v, out, depth + 1);
    return;
  }
  if (!isObj(node)) return;
  for (const [k, v] of Object.entries(node)) {
    if (PROSE_KEYS.has(k) && typeof v === 'string') {
      if (v) out.push(v);
    } else if (typeof v === 'object') schemaProse(v, out, depth + 1);
  }
}

function definitionTexts(def: unknown, out: string[]): void {
  if (!isObj(def)) return;
  // Gemini: one Tool groups several declarations.
  for (const group of [def.functionDeclarations, def.function_declarations]) if (Array.isArray(group)) for (const d of group) definitionTexts(d, out);
  // OpenAI chat nests a function (or custom tool) under its type; Responses, Anthropic and Gemini do not.
  const fn = isObj(def.function) ? def.function : isObj(def.custom) ? def.custom : def;
  const name = typeof fn.name === 'string' ? fn.name : '';
  const description = typeof fn.description === 'string' ? fn.description : '';
  if (name || description) out.push(name && description ? `${name}: ${description}` : name || description);
  // A Responses remote MCP server describes itself to the model.
  if (typeof def.server_description === 'string' && def.server_description) out.push(def.server_description);
  for (const k of SCHEMA_KEYS) if (typeof fn[k] === 'object') schemaProse(fn[k], out, 0);
}

/**
 * The firewall's texts of tool definitions: each tool's name with its description, then every
 * description and title in its schemas. They are inspected as user text: definitions are often
 * copied from third-party tool servers, and the model reads them as instructions.
 */
export function toolDefinitionItems(defs: unknown[]): InspectableText[] {
  const out: string[] = [];
  for (const d of defs) definitionTexts(d, out);
  return out;
}

/** The definitions serialized as sent (JSON), or null when there are none. */
export function toolDefinitionsJson(defs: unknown[]): string | null {
  return defs.length ? JSON.stringify(defs) : null;
}

/**
 * Input tokens the definitions add, approximately: the tokens of their JSON. Providers render
 * them in their own template (OpenAI a TypeScript-like namespace, Anthropic a system preamble), of
 * a similar size; the JSON keeps every name, description and schema the model is charged for.
 */
export function toolDefinitionTokens(defs: unknown[]): number {
  const json = toolDefinitionsJson(defs);
  return json ? countTokens(json) : 0;
}
