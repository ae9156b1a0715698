/**
 * What a provider-native proxy request is: operation and model (from the native path and body),
 * whether it streams, its inspectable text (from the provider module) and a provider-neutral view
 * of it for the pricing estimate (the /v1/execute translation, when the payload translates).
 */
import type { ProviderId } from '../config';
import { ExecuteInputError, MAX_OUTPUT_TOKENS_LIMIT, translateExecuteInput, validOutputCeiling } from '../executions/execute-input';
import type { ExecutionInput } from '../executions/types';
import { providerModules } from '../providers';
import type { Operation } from '../providers/types';
import { ProxyError } from './native-errors';
import { textOfItem, type InspectableText } from '../governance/firewall/roles';
import { toolDefinitionItems, toolDefinitions } from '../providers/shared/tool-definitions';

export interface ParsedBody {
  kind: 'json' | 'multipart';
  raw: Buffer;
  contentType: string;
  /** Parsed JSON body, or the text fields of a multipart form. */
  json: Record<string, unknown>;
}

export interface ProxyCall {
  provider: ProviderId;
  /** Native path (after /v1/proxy/{provider}), with the query string minus any `key=`. */
  path: string;
  /** Native path without the query. */
  pathname: string;
  operation: Operation;
  model: string;
  stream: boolean;
  /** Chat paths are the ones routing controls apply to. */
  chat: boolean;
  /** The texts of the request's messages (its provider-neutral view when the payload does not translate). */
  inspectable: string[];
  /** What the firewall inspects: the messages' texts with their roles (system prompt, tool output), then the tool definitions' texts. */
  inspectableItems: InspectableText[];
  /** The tools the request offers the model, by name: what governance and the permit see of them. */
  tools: string[];
  /** Provider-neutral request (for estimates and the call record). */
  request: ExecutionInput['request'];
}

const GOOGLE_ACTION = /^\/(v1beta|v1|v1alpha)\/models\/([^/:]+):(generateContent|streamGenerateContent|embedContent|batchEmbedContents)$/;

function operationOf(provider: ProviderId, pathname: string): { operation: Operation; chat: boolean; model?: string; stream?: boolean } | null {
  const p = pathname.replace(/\/+$/, '');
  switch (provider) {
    case 'openai': {
      const map: Record<string, Operation> = {
        '/v1/chat/completions': 'generate.text',
        '/v1/embeddings': 'embed.text',
        '/v1/images/generations': 'generate.image',
        '/v1/audio/speech': 'generate.audio',
        '/v1/audio/transcriptions': 'transcribe.audio',
        // The Responses API: governed like chat, its native events passed through (src/providers/openai/responses.ts).
        '/v1/responses': 'generate.text',
      };
      return map[p] ? { operation: map[p], chat: p === '/v1/chat/completions' } : null;
    }
    case 'deepseek':
      return p === '/chat/completions' || p === '/v1/chat/completions' ? { operation: 'generate.text', chat: true } : null;
    case 'mistral':
      if (p === '/v1/chat/completions') return { operation: 'generate.text', chat: true };
      if (p === '/v1/embeddings') return { operation: 'embed.text', chat: false };
      return null;
    case 'anthropic':
      return p === '/v1/messages' ? { operation: 'generate.text', chat: true } : null;
    case 'google': {
      const m = GOOGLE_ACTION.exec(p);
      if (!m) return null;
      const model = decodeURIComponent(m[2]);
      if (m[3] === 'embedContent' || m[3] === 'batchEmbedContents') return { operation: 'embed.text', chat: false, model, stream: false };
      return { operation: 'generate.text', chat: false, model, stream: m[3] === 'streamGenerateContent' };
    }
  }
}

/** Multipart text fields (openai transcriptions: model, prompt, response_format...). */
export async function multipartFields(raw: Buffer, contentType: string): Promise<Record<string, unknown>> {
  const form = await new Response(raw, { headers: { 'content-type': contentType } }).formData();
  const out: Record<string, unknown> = {};
  for (const [k, v] of form.entries()) if (typeof v === 'string') out[k] = v;
  return out;
}

/** Native fields that set the output-token ceiling, per provider (src/proxy/native-ceiling.ts sets them). */
export const CEILING_FIELDS: Record<ProviderId, string[][]> = {
  openai: [['max_tokens'], ['max_completion_tokens'], ['max_output_tokens']],
  anthropic: [['max_tokens']],
  google: [['generationConfig', 'maxOutputTokens'], ['generation_config', 'max_output_tokens']],
  deepseek: [['max_tokens']],
  mistral: [['max_tokens']],
};

/**
 * The output-token ceiling sizes the spend reservation, so it is checked before anything else:
 * an integer from 1 to 1,000,000 (what /v1/executions accepts), else 400 in the provider's shape.
 */
function checkOutputCeiling(provider: ProviderId, b: Record<string, unknown>): number | undefined {
  let ceiling: number | undefined;
  for (const path of CEILING_FIELDS[provider]) {
    let v: unknown = b;
    for (const k of path) v = v !== null && typeof v === 'object' ? (v as Record<string, unknown>)[k] : undefined;
    if (v === undefined || v === null) continue;
    if (!validOutputCeiling(v)) {
      throw new ProxyError(400, 'invalid_max_tokens', `${path.join('.')} must be an integer from 1 to ${MAX_OUTPUT_TOKENS_LIMIT}`);
    }
    // Two ceiling fields (max_tokens and max_completion_tokens): the larger bounds the worst case.
    ceiling = Math.max(ceiling ?? 0, v);
  }
  return ceiling;
}

export function inferCall(provider: ProviderId, path: string, body: ParsedBody): ProxyCall {
  const pathname = path.split('?')[0];
  const op = operationOf(provider, pathname);
  if (!op) throw new ProxyError(404, 'unsupported_proxy_path', `POST ${pathname} is not a ${provider} endpoint the Tollgate proxy governs`);
  const b = body.json;
  const model = op.model ?? (typeof b.model === 'string' ? b.model : '');
  if (!model) throw new ProxyError(400, 'model_required', 'The request names no model');
  const stream = op.stream ?? b.stream === true;
  const ceiling = checkOutputCeiling(provider, b);
  const messageItems = body.kind === 'multipart' ? (typeof b.prompt === 'string' ? [b.prompt] : []) : providerModules[provider].inspectableItems(b);
  const inspectable = messageItems.map(textOfItem);
  const tools = body.kind === 'json' ? providerModules[provider].requestTools(b) : [];
  // The provider shows the model the tool definitions too: an injection hidden in one is caught as in a message.
  const definitions = body.kind === 'json' ? toolDefinitions(b) : [];
  const inspectableItems = [...messageItems, ...toolDefinitionItems(definitions)];

  let request: ExecutionInput['request'] | null = null;
  if (body.kind === 'json' && op.operation !== 'transcribe.audio') {
    try {
      const t = translateExecuteInput(provider, model, b);
      // The path decides the family; the payload refines chat into understand.image / transcribe.audio.
      if (t.operation === op.operation || (op.chat || provider === 'google') && op.operation === 'generate.text' && t.operation !== 'embed.text') request = t;
    } catch (err) {
      if (!(err instanceof ExecuteInputError)) throw err;
    }
  }
  if (!request) {
    request =
      op.operation === 'transcribe.audio'
        ? { operation: op.operation, inputs: inspectable.map((t) => ({ type: 'text' as const, role: 'user' as const, text: t })) }
        : {
            operation: op.operation,
            messages: inspectable.map((t) => ({ role: 'user' as const, content: t })),
            ...(ceiling !== undefined ? { parameters: { max_output_tokens: ceiling } } : {}),
            // The tool definitions are counted in the estimate (a translated payload carries them in its provider options already).
            ...(definitions.length ? { providerOptions: { [provider]: { tools: definitions } } } : {}),
          };
  }
  // The ceiling the native body sets, whichever field carries it, is what the reservation is sized on.
  if (ceiling !== undefined && request.parameters?.max_output_tokens !== ceiling && (request.operation === 'generate.text' || request.operation === 'understand.image')) {
    request = { ...request, parameters: { ...request.parameters, max_output_tokens: ceiling } };
  }
  return { provider, path, pathname, operation: request.operation, model, stream, chat: op.chat, inspectable, inspectableItems, tools, request };
}
