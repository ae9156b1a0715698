/** Normalized → OpenAI native requests (chat, embeddings, images, speech, transcriptions). */
import { Blob } from 'node:buffer';
import { FormData } from 'undici';
import type { NormalizedRequest } from '../types';
import type { BuildContext, NativeCall } from '../shared/module';
import { buildChatBody, buildEmbeddingsBody, mergeOptions, refuse } from '../shared/openai-compat';
import { requestTexts } from '../shared/usage';

export const OPENAI_PATHS = {
  chat: '/v1/chat/completions',
  embeddings: '/v1/embeddings',
  images: '/v1/images/generations',
  speech: '/v1/audio/speech',
  transcriptions: '/v1/audio/transcriptions',
} as const;

const json = (path: string, body: Record<string, unknown>, stream = false): NativeCall => ({
  method: 'POST',
  path,
  headers: {},
  body,
  bodyKind: 'json',
  responseKind: stream ? 'sse' : 'json',
});

export async function buildOpenAIRequest(req: NormalizedRequest, ctx: BuildContext): Promise<NativeCall> {
  const prompt = () => requestTexts(req).join('\n');
  switch (req.operation) {
    case 'generate.text':
    case 'understand.image':
      return json(OPENAI_PATHS.chat, buildChatBody(req, { maxTokensField: 'max_completion_tokens', streamUsageOption: true }), req.stream);
    case 'embed.text':
      return json(OPENAI_PATHS.embeddings, buildEmbeddingsBody(req));
    case 'generate.image':
      return json(OPENAI_PATHS.images, mergeOptions(req, { model: req.model, prompt: prompt(), n: (req.providerOptions?.n) ?? 1 }));
    case 'generate.audio': {
      const body = mergeOptions(req, { model: req.model, input: prompt() });
      body.voice ??= 'alloy';
      body.response_format ??= 'mp3';
      return { ...json(OPENAI_PATHS.speech, body), responseKind: 'binary' };
    }
    case 'transcribe.audio': {
      const audio = (req.inputs ?? []).find((i) => i.type === 'audio' && i.asset?.url);
      if (!audio?.asset) return refuse('transcribe.audio needs an input of type audio with an asset url');
      const asset = await ctx.fetchAsset(audio.asset.url, audio.asset.mime_type);
      const form = new FormData();
      form.append('file', new Blob([asset.data], { type: asset.mimeType }), asset.filename);
      const fields = mergeOptions(req, { model: req.model, response_format: 'json', temperature: req.parameters?.temperature });
      const textPrompt = prompt();
      if (textPrompt && fields.prompt === undefined) fields.prompt = textPrompt;
      for (const [k, v] of Object.entries(fields)) if (v !== undefined && v !== null) form.append(k, typeof v === 'string' ? v : JSON.stringify(v));
      return { method: 'POST', path: OPENAI_PATHS.transcriptions, headers: {}, body: form, bodyKind: 'multipart', responseKind: 'json' };
    }
  }
}
