/**
 * The emulator's read-only routes: each provider's model list and model details, and token
 * counting (Anthropic `count_tokens`, Gemini `countTokens`), in the native shapes the official
 * SDKs parse. The catalogue is the pricing table's models.
 */
import { MODEL_PRICES } from '../src/pricing/table';
import { countChatTokens } from '../src/pricing/tokenizer';
import { toolDefinitions, toolDefinitionTokens } from '../src/providers/shared/tool-definitions';
import type { ProviderId } from '../src/providers/types';

const CREATED = 1_735_689_600; // 2025-01-01T00:00:00Z
const OWNER: Record<ProviderId, string> = { openai: 'openai', anthropic: 'anthropic', google: 'google', deepseek: 'deepseek', mistral: 'mistralai' };

const ids = (provider: ProviderId) => Object.keys(MODEL_PRICES[provider]);

function openaiStyleModel(provider: ProviderId, id: string) {
  const base = { id, object: 'model', created: CREATED, owned_by: OWNER[provider] };
  if (provider !== 'mistral') return base;
  // Mistral's base-model card: what its SDK requires besides the OpenAI-style fields.
  const embed = id.includes('embed');
  return {
    ...base,
    type: 'base',
    name: id,
    description: null,
    max_context_length: embed ? 8192 : 131_072,
    aliases: [],
    deprecation: null,
    capabilities: { completion_chat: !embed, completion_fim: false, function_calling: !embed, fine_tuning: false, vision: id.startsWith('pixtral'), classification: false },
  };
}

function anthropicModel(id: string) {
  return { type: 'model', id, display_name: id.replace(/-/g, ' '), created_at: new Date(CREATED * 1000).toISOString() };
}

function googleModel(id: string) {
  const embedding = id.includes('embedding');
  return {
    name: `models/${id}`,
    version: '001',
    displayName: id,
    inputTokenLimit: embedding ? 2048 : 1_048_576,
    outputTokenLimit: embedding ? 1 : 65_536,
    supportedGenerationMethods: embedding ? ['embedContent'] : ['generateContent', 'countTokens'],
  };
}

/** Texts of a messages-shaped body (Anthropic) or contents (Gemini), for counting. */
function textsOf(body: Record<string, unknown>): string[] {
  const out: string[] = [];
  const add = (v: unknown) => {
    if (typeof v === 'string') out.push(v);
    else if (Array.isArray(v)) for (const b of v) if (b && typeof b === 'object' && typeof (b as { text?: unknown }).text === 'string') out.push((b as { text: string }).text);
  };
  add(body.system);
  for (const m of Array.isArray(body.messages) ? body.messages : []) add((m as { content?: unknown }).content);
  for (const c of Array.isArray(body.contents) ? body.contents : []) add((c as { parts?: unknown }).parts);
  return out;
}

export type ReadResult = { status: number; body: unknown } | null;

/** The answer of a read route, or null when `method path` is not one. */
export function readRoute(provider: ProviderId, method: string, path: string, body: Record<string, unknown> | null): ReadResult {
  const notFound = (_id: string): ReadResult => ({ status: 404, body: null });
  if (provider === 'openai' || provider === 'mistral' || provider === 'deepseek') {
    const p = provider === 'deepseek' ? path.replace(/^\/v1(?=\/)/, '') : path;
    const list = provider === 'deepseek' ? '/models' : '/v1/models';
    if (method === 'GET' && p === list) return { status: 200, body: { object: 'list', data: ids(provider).map((id) => openaiStyleModel(provider, id)) } };
    if (method === 'GET' && p.startsWith(`${list}/`)) {
      const id = decodeURIComponent(p.slice(list.length + 1));
      return ids(provider).includes(id) ? { status: 200, body: openaiStyleModel(provider, id) } : notFound(id);
    }
  }
  if (provider === 'anthropic') {
    if (method === 'GET' && path === '/v1/models') {
      const data = ids('anthropic').map(anthropicModel);
      return { status: 200, body: { data, has_more: false, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null } };
    }
    if (method === 'GET' && path.startsWith('/v1/models/')) {
      const id = decodeURIComponent(path.slice('/v1/models/'.length));
      return ids('anthropic').includes(id) ? { status: 200, body: anthropicModel(id) } : notFound(id);
    }
    if (method === 'POST' && path === '/v1/messages/count_tokens') return { status: 200, body: { input_tokens: countChatTokens(textsOf(body ?? {})) + toolDefinitionTokens(toolDefinitions(body)) } };
  }
  if (provider === 'google') {
    const m = /^\/(v1beta|v1)\/models(?:\/([^:]+))?(?::(countTokens))?$/.exec(path);
    if (m && method === 'GET' && !m[2]) return { status: 200, body: { models: ids('google').map(googleModel) } };
    if (m && method === 'GET' && m[2] && !m[3]) {
      const id = decodeURIComponent(m[2]);
      return ids('google').includes(id) ? { status: 200, body: googleModel(id) } : notFound(id);
    }
    if (m && method === 'POST' && m[2] && m[3] === 'countTokens') return { status: 200, body: { totalTokens: countChatTokens(textsOf(body ?? {})) + toolDefinitionTokens(toolDefinitions(body)) } };
  }
  return null;
}
