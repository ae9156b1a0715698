/**
 * POST /v1/execute: provider resolution and the translation of a provider-shaped `input` into the
 * provider-neutral request. The operation is inferred from the payload after the provider is known.
 * Keys that are not translated travel as that provider's `provider_options` (top-level wins).
 */
import type { ProviderId } from '../config';
import type { PricingCatalog } from '../pricing/types';
import { ChatMessage, InputItem, Operation, supportsOperation } from '../providers/types';
import type { ExecuteRequest } from './schema';
import type { ExecutionInput } from './types';

export class ExecuteInputError extends Error {
  constructor(
    readonly path: string,
    message: string,
  ) {
    super(message);
    this.name = 'ExecuteInputError';
  }
}

export interface ResolvedExecute {
  provider: ProviderId;
  model: string;
  alias: string | null;
  reason_code: 'explicit_request' | 'provider_inferred_from_model';
}

export function resolveExecuteTarget(body: Pick<ExecuteRequest, 'provider' | 'model'>, pricing: PricingCatalog): ResolvedExecute {
  if (body.provider) {
    const r = pricing.resolveModel(body.model, body.provider);
    if (r && r !== 'ambiguous') return { provider: body.provider, model: r.model, alias: r.alias, reason_code: 'explicit_request' };
    // Unknown to the pricing table: dispatched as given (governance denies budget.pricing_unavailable).
    return { provider: body.provider, model: body.model, alias: null, reason_code: 'explicit_request' };
  }
  const r = pricing.resolveModel(body.model);
  if (r === 'ambiguous') throw new ExecuteInputError('provider', `Model "${body.model}" is offered by several providers; set provider`);
  if (!r) throw new ExecuteInputError('provider', `Cannot determine the provider of model "${body.model}"; set provider`);
  return { provider: r.provider, model: r.model, alias: r.alias, reason_code: 'provider_inferred_from_model' };
}

type Obj = Record<string, unknown>;
/** A wire field that should be a string; anything else is ''. */
const str = (v: unknown): string => (typeof v === 'string' ? v : '');
const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);

function omit(o: Obj, keys: string[]): Obj {
  return Object.fromEntries(Object.entries(o).filter(([k]) => !keys.includes(k)));
}

/** The output-token ceiling, as /v1/executions accepts it (parameters.max_output_tokens): an integer 1 to 1,000,000. */
export const MAX_OUTPUT_TOKENS_LIMIT = 1_000_000;

export function validOutputCeiling(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= MAX_OUTPUT_TOKENS_LIMIT;
}

function params(max: unknown, temperature: unknown, topP: unknown, maxPath = 'input.max_tokens'): ExecutionInput['request']['parameters'] | undefined {
  const p: NonNullable<ExecutionInput['request']['parameters']> = {};
  if (max !== undefined && max !== null) {
    // It sizes the spend reservation: a negative, fractional or huge value must not get through.
    if (!validOutputCeiling(max)) throw new ExecuteInputError(maxPath, `must be an integer from 1 to ${MAX_OUTPUT_TOKENS_LIMIT}`);
    p.max_output_tokens = max;
  }
  if (typeof temperature === 'number') p.temperature = temperature;
  if (typeof topP === 'number') p.top_p = topP;
  return Object.keys(p).length ? p : undefined;
}

function role(r: unknown, path: string): ChatMessage['role'] {
  if (r === 'system' || r === 'developer') return 'system';
  if (r === 'user') return 'user';
  if (r === 'assistant' || r === 'model') return 'assistant';
  throw new ExecuteInputError(path, 'Unsupported message role');
}

interface Parts {
  texts: string[];
  images: InputItem[];
  audio: InputItem[];
}

/** OpenAI-style content: a string or an array of text / image_url / input_audio parts. */
function openaiParts(content: unknown, path: string): Parts {
  const out: Parts = { texts: [], images: [], audio: [] };
  if (typeof content === 'string') {
    out.texts.push(content);
    return out;
  }
  if (!Array.isArray(content)) throw new ExecuteInputError(path, 'content must be a string or an array of parts');
  content.forEach((part, i) => {
    if (!isObj(part)) throw new ExecuteInputError(`${path}.${i}`, 'content part must be an object');
    if (part.type === 'text' && typeof part.text === 'string') out.texts.push(part.text);
    else if (part.type === 'image_url') {
      const url = typeof part.image_url === 'string' ? part.image_url : isObj(part.image_url) ? part.image_url.url : undefined;
      if (typeof url !== 'string') throw new ExecuteInputError(`${path}.${i}.image_url`, 'image_url needs a url');
      out.images.push({ type: 'image', role: 'user', asset: { source: 'url', url } });
    } else throw new ExecuteInputError(`${path}.${i}.type`, `Unsupported content part type "${String(part.type)}"`);
  });
  return out;
}

function anthropicParts(content: unknown, path: string): Parts {
  const out: Parts = { texts: [], images: [], audio: [] };
  if (typeof content === 'string') {
    out.texts.push(content);
    return out;
  }
  if (!Array.isArray(content)) throw new ExecuteInputError(path, 'content must be a string or an array of blocks');
  content.forEach((b, i) => {
    if (!isObj(b)) throw new ExecuteInputError(`${path}.${i}`, 'content block must be an object');
    if (b.type === 'text' && typeof b.text === 'string') out.texts.push(b.text);
    else if (b.type === 'image') out.images.push({ type: 'image', role: 'user', asset: { source: 'url', url: str((b.source as Obj | undefined)?.url) } });
    else throw new ExecuteInputError(`${path}.${i}.type`, `Unsupported content block type "${String(b.type)}"`);
  });
  return out;
}

function googleParts(parts: unknown, path: string): Parts {
  const out: Parts = { texts: [], images: [], audio: [] };
  if (!Array.isArray(parts)) throw new ExecuteInputError(path, 'parts must be an array');
  parts.forEach((p, i) => {
    if (!isObj(p)) throw new ExecuteInputError(`${path}.${i}`, 'part must be an object');
    if (typeof p.text === 'string') out.texts.push(p.text);
    else if (isObj(p.fileData)) {
      const mime = str(p.fileData.mimeType);
      const item: InputItem = { type: mime.startsWith('audio/') ? 'audio' : 'image', role: 'user', asset: { source: 'url', url: str(p.fileData.fileUri), mime_type: mime || undefined } };
      (item.type === 'audio' ? out.audio : out.images).push(item);
    } else throw new ExecuteInputError(`${path}.${i}`, 'Only text and fileData parts are supported');
  });
  return out;
}

/** Builds a request from messages with their parts: text-only → generate.text, else multimodal inputs. */
function fromConversation(msgs: { role: ChatMessage['role']; parts: Parts }[]): Pick<ExecutionInput['request'], 'operation' | 'messages' | 'inputs'> {
  const images = msgs.flatMap((m) => m.parts.images);
  const audio = msgs.flatMap((m) => m.parts.audio);
  if (images.length === 0 && audio.length === 0) {
    return { operation: 'generate.text', messages: msgs.map((m) => ({ role: m.role, content: m.parts.texts.join('\n') })) };
  }
  const inputs: InputItem[] = [];
  for (const m of msgs) {
    for (const t of m.parts.texts) inputs.push({ type: 'text', role: 'user', text: t });
    inputs.push(...m.parts.images, ...m.parts.audio);
  }
  return { operation: audio.length > 0 && images.length === 0 ? 'transcribe.audio' : 'understand.image', inputs };
}

export function translateExecuteInput(provider: ProviderId, model: string, input: Obj): ExecutionInput['request'] {
  let req: ExecutionInput['request'];
  const rest = (keys: string[]) => {
    const o = omit(input, ['model', 'stream', ...keys]);
    return Object.keys(o).length ? { [provider]: o } : undefined;
  };
  if (provider === 'google') {
    if (Array.isArray(input.contents)) {
      const msgs = input.contents.map((c, i) => {
        if (!isObj(c)) throw new ExecuteInputError(`input.contents.${i}`, 'must be an object');
        return { role: role(c.role ?? 'user', `input.contents.${i}.role`), parts: googleParts(c.parts, `input.contents.${i}.parts`) };
      });
      const sys = isObj(input.systemInstruction) ? googleParts(input.systemInstruction.parts, 'input.systemInstruction.parts') : null;
      if (sys) msgs.unshift({ role: 'system', parts: sys });
      const gc = isObj(input.generationConfig) ? input.generationConfig : {};
      req = { ...fromConversation(msgs), parameters: params(gc.maxOutputTokens, gc.temperature, gc.topP, 'input.generationConfig.maxOutputTokens') };
      const extra = omit(input, ['model', 'stream', 'contents', 'systemInstruction']);
      if (isObj(extra.generationConfig)) {
        const g = omit(extra.generationConfig, ['maxOutputTokens', 'temperature', 'topP']);
        if (Object.keys(g).length) extra.generationConfig = g;
        else delete extra.generationConfig;
      }
      if (Object.keys(extra).length) req.providerOptions = { google: extra };
    } else if (isObj(input.content)) {
      const parts = googleParts(input.content.parts, 'input.content.parts');
      req = { operation: 'embed.text', inputs: parts.texts.map((t) => ({ type: 'text', role: 'user', text: t })), providerOptions: rest(['content']) };
    } else {
      throw new ExecuteInputError('input', 'Cannot infer the operation: send "contents" (generateContent) or "content" (embedContent)');
    }
  } else if (provider === 'anthropic') {
    if (!Array.isArray(input.messages)) throw new ExecuteInputError('input.messages', 'Anthropic input needs a messages array');
    const msgs = input.messages.map((m, i) => {
      if (!isObj(m)) throw new ExecuteInputError(`input.messages.${i}`, 'must be an object');
      return { role: role(m.role, `input.messages.${i}.role`), parts: anthropicParts(m.content, `input.messages.${i}.content`) };
    });
    if (input.system !== undefined) msgs.unshift({ role: 'system', parts: anthropicParts(input.system, 'input.system') });
    req = { ...fromConversation(msgs), parameters: params(input.max_tokens, input.temperature, input.top_p), providerOptions: rest(['messages', 'system', 'max_tokens', 'temperature', 'top_p']) };
  } else {
    // openai, deepseek, mistral: OpenAI-style payloads.
    if (Array.isArray(input.messages)) {
      const msgs = input.messages.map((m, i) => {
        if (!isObj(m)) throw new ExecuteInputError(`input.messages.${i}`, 'must be an object');
        return { role: role(m.role, `input.messages.${i}.role`), parts: openaiParts(m.content, `input.messages.${i}.content`) };
      });
      req = {
        ...fromConversation(msgs),
        parameters: params(input.max_completion_tokens ?? input.max_tokens, input.temperature, input.top_p, input.max_completion_tokens !== undefined ? 'input.max_completion_tokens' : 'input.max_tokens'),
        providerOptions: rest(['messages', 'max_tokens', 'max_completion_tokens', 'temperature', 'top_p']),
      };
    } else if (provider === 'openai' && typeof input.prompt === 'string') {
      req = { operation: 'generate.image', messages: [{ role: 'user', content: input.prompt }], providerOptions: rest(['prompt']) };
    } else if (provider === 'openai' && typeof input.input === 'string' && typeof input.voice === 'string') {
      req = { operation: 'generate.audio', messages: [{ role: 'user', content: input.input }], providerOptions: rest(['input']) };
    } else if (provider === 'openai' && typeof input.file === 'string') {
      req = { operation: 'transcribe.audio', inputs: [{ type: 'audio', role: 'user', asset: { source: 'url', url: input.file } }], providerOptions: rest(['file']) };
    } else if (typeof input.input === 'string' || (Array.isArray(input.input) && input.input.every((x) => typeof x === 'string'))) {
      const texts = typeof input.input === 'string' ? [input.input] : (input.input);
      req = { operation: 'embed.text', inputs: texts.map((t) => ({ type: 'text', role: 'user', text: t })), providerOptions: rest(['input']) };
    } else {
      throw new ExecuteInputError('input', 'Cannot infer the operation: send "messages" (chat), "input" (embeddings or speech with "voice"), "prompt" (images) or "file" (transcription)');
    }
  }
  if (!req.providerOptions) delete req.providerOptions;
  if (!req.parameters) delete req.parameters;
  const op: Operation = req.operation;
  if (!supportsOperation(provider, op)) throw new ExecuteInputError('input', `Provider ${provider} does not support ${op} on this route`);
  if ((op === 'generate.text' || op === 'understand.image') && model === '') throw new ExecuteInputError('model', 'model is required');
  return req;
}
