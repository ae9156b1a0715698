/** OpenAI native responses → ProviderResult, and usage extraction from native bodies. */
import { responsesUsage } from './responses';
import type { NormalizedRequest, ProviderResult, Usage } from '../types';
import { ProviderError } from '../types';
import type { NativeCall } from '../shared/module';
import { openAIUsageCounts, parseChatResponse, parseEmbeddingsResponse } from '../shared/openai-compat';
import { makeUsage, requestTexts, type UsageCounts } from '../shared/usage';
import { OPENAI_PATHS } from './request';

const pathOf = (p: string) => p.split('?')[0].replace(/\/+$/, '');

/** `usage` of an images or transcription response (token-based for gpt-image / gpt-4o-transcribe). */
function mediaUsage(u: any): UsageCounts {
  if (!u || typeof u !== 'object') return {};
  if (u.type === 'duration') return { audio_seconds: typeof u.seconds === 'number' ? u.seconds : undefined };
  return {
    input_tokens: u.input_tokens,
    output_tokens: u.output_tokens,
    total_tokens: u.total_tokens,
    cached_input_tokens: u.input_tokens_details?.cached_tokens,
  };
}

export function parseOpenAIResponse(req: NormalizedRequest, call: NativeCall, payload: unknown, contentType: string): ProviderResult {
  const path = pathOf(call.path);
  if (path === OPENAI_PATHS.chat) return parseChatResponse(payload);
  if (path === OPENAI_PATHS.embeddings) return parseEmbeddingsResponse(payload);
  if (path === OPENAI_PATHS.speech) {
    const bytes = Buffer.isBuffer(payload) ? payload : Buffer.from(typeof payload === 'string' ? payload : '');
    const characters = requestTexts(req).join('\n').length;
    return {
      output: { content: [] },
      output_assets: [{ type: 'audio', mime_type: contentType.split(';')[0] || 'audio/mpeg', url: null, data_b64: bytes.toString('base64'), bytes: bytes.length }],
      usage: makeUsage({ characters }),
      finish_reason: null,
    };
  }
  const b = payload as Record<string, any>;
  if (path === OPENAI_PATHS.images) {
    if (!b || !Array.isArray(b.data)) throw new ProviderError({ kind: 'malformed_response', status: 200, retryable: true, message: 'images response without data', native: payload });
    return {
      output: { content: [] },
      output_assets: b.data.map((d: any) => {
        const data = typeof d.b64_json === 'string' ? d.b64_json : null;
        return { type: 'image', mime_type: `image/${b.output_format ?? 'png'}`, url: d.url ?? null, data_b64: data, bytes: data ? Buffer.from(data, 'base64').length : null };
      }),
      usage: makeUsage({ ...mediaUsage(b.usage), images: b.data.length }),
      finish_reason: null,
    };
  }
  if (path === OPENAI_PATHS.transcriptions) {
    const text = typeof b === 'string' ? b : typeof b?.text === 'string' ? b.text : null;
    if (text === null) throw new ProviderError({ kind: 'malformed_response', status: 200, retryable: true, message: 'transcription without text', native: payload });
    return {
      output: { content: [{ type: 'text', role: 'assistant', text }] },
      output_assets: [],
      usage: makeUsage(mediaUsage(b?.usage)),
      finish_reason: null,
    };
  }
  throw new ProviderError({ kind: 'malformed_response', status: null, retryable: false, message: `no response parser for ${path}` });
}

export function extractOpenAIUsage(path: string, body: unknown): Usage | null {
  const p = pathOf(path).replace(/^\/v1/, '');
  const b = body as Record<string, any>;
  if (!b || typeof b !== 'object') return null;
  if (p === '/chat/completions' || p === '/embeddings') {
    const c = openAIUsageCounts(b.usage);
    return c ? makeUsage(p === '/embeddings' ? { ...c, output_tokens: 0 } : c) : null;
  }
  if (p === '/images/generations' || p === '/images/edits') {
    return makeUsage({ ...mediaUsage(b.usage), images: Array.isArray(b.data) ? b.data.length : 0 });
  }
  if (p === '/audio/transcriptions' || p === '/audio/translations') return b.usage ? makeUsage(mediaUsage(b.usage)) : null;
  if (p === '/responses') return responsesUsage(b);
  return null;
}
