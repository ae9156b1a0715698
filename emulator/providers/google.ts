/**
 * Gemini's API (`/google/v1beta/models/{model}:…`, also `/v1/`): generateContent,
 * streamGenerateContent (SSE), embedContent and batchEmbedContents.
 */
import { providerModules } from '../../src/providers';
import { countChatTokens, countTokens } from '../../src/pricing/tokenizer';
import { toolDefinitions, toolDefinitionTokens } from '../../src/providers/shared/tool-definitions';
import { chunksOf, embeddingFor, hashHex, outputTokensOf, replyFor } from '../content';
import type { Faults } from '../faults';
import { HttpFail, sendJson, sseWriter, unknownRoute, type Ctx, type ProviderRoutes } from '../http';
import { googleResponseSchema, googleToolCall, valueFor } from '../structured';

export const googleRoutes: ProviderRoutes = async (ctx, faults) => {
  const m = /^\/(v1beta|v1)\/models\/([^:]+):(generateContent|streamGenerateContent|embedContent|batchEmbedContents)$/.exec(ctx.path);
  if (!m) throw unknownRoute(ctx);
  const model = decodeURIComponent(m[2]);
  if (m[3] === 'generateContent') return generate(ctx, faults, model, false);
  if (m[3] === 'streamGenerateContent') return generate(ctx, faults, model, true);
  return embed(ctx, model, m[3] === 'batchEmbedContents');
};

function googleTexts(body: any): { texts: string[]; last: string; fileParts: string[] } {
  const texts = providerModules.google.inspectableText(body);
  const contents = Array.isArray(body?.contents) ? body.contents : [];
  const lastUser = [...contents].reverse().find((c: any) => (c?.role ?? 'user') === 'user');
  const parts = Array.isArray(lastUser?.parts) ? lastUser.parts : [];
  const fileParts = parts.filter((p: any) => p?.fileData || p?.inlineData).map((p: any) => (p.fileData ? `${p.fileData.mimeType} ${p.fileData.fileUri}` : `${p.inlineData.mimeType} inline`));
  const last = parts.filter((p: any) => typeof p?.text === 'string').map((p: any) => p.text).join('\n');
  return { texts, last: [last, ...fileParts].filter(Boolean).join(' '), fileParts };
}

async function generate(ctx: Ctx, faults: Faults, model: string, stream: boolean) {
  const b = ctx.body;
  if (!Array.isArray(b?.contents) || !b.contents.length) throw new HttpFail(400, '* GenerateContentRequest.contents: contents is not specified');
  const { texts, last, fileParts } = googleTexts(b);
  const seed = JSON.stringify(b.contents);
  const tool = googleToolCall(b);
  const schema = tool ? null : googleResponseSchema(b);
  const { text, truncated } = schema ? { text: JSON.stringify(valueFor(schema, seed)), truncated: false } : replyFor(last, b.generationConfig?.maxOutputTokens, faults.fillOutput);
  const functionCall = tool ? { name: tool.name, args: valueFor(tool.parameters, seed) } : null;
  const prompt = countChatTokens(texts) + toolDefinitionTokens(toolDefinitions(b)) + fileParts.length * 258;
  const output = functionCall ? countTokens(JSON.stringify(functionCall.args)) : outputTokensOf(text, b.generationConfig?.maxOutputTokens);
  const cached = Math.min(faults.cachedTokens, prompt);
  const usageMetadata = {
    promptTokenCount: prompt,
    candidatesTokenCount: output,
    totalTokenCount: prompt + output,
    ...(cached ? { cachedContentTokenCount: cached } : {}),
    promptTokensDetails: [{ modality: 'TEXT', tokenCount: prompt }],
  };
  const finishReason = truncated ? 'MAX_TOKENS' : 'STOP';
  const responseId = hashHex(JSON.stringify(b)).slice(0, 20);
  const candidate = (t: string, finish?: string) => ({ content: { parts: [functionCall ? { functionCall } : { text: t }], role: 'model' }, ...(finish ? { finishReason: finish } : {}), index: 0 });
  if (!stream) {
    return sendJson(ctx.res, 200, {
      candidates: [candidate(text, finishReason)],
      ...(faults.omitUsage ? {} : { usageMetadata }),
      modelVersion: model,
      responseId,
    });
  }
  const w = sseWriter(ctx, faults);
  // A function call arrives whole in one chunk, as Gemini streams it.
  const pieces = functionCall ? [''] : chunksOf(text);
  for (let i = 0; i < pieces.length; i++) {
    const final = i === pieces.length - 1;
    if (final && faults.malformed) {
      ctx.res.write('data: {"candidates": [{"content": \r\n\r\n');
      return w.end();
    }
    const usage = faults.omitUsage ? {} : { usageMetadata: final ? usageMetadata : { promptTokenCount: prompt, totalTokenCount: prompt } };
    if (!(await w.write(JSON.stringify({ candidates: [candidate(pieces[i], final ? finishReason : undefined)], ...usage, modelVersion: model, responseId })))) return;
  }
  w.end();
}

function embed(ctx: Ctx, model: string, batch: boolean) {
  const b = ctx.body;
  const textOf = (c: any) => (Array.isArray(c?.parts) ? c.parts.map((p: any) => p?.text ?? '').join('\n') : '');
  if (batch) {
    if (!Array.isArray(b?.requests) || !b.requests.length) throw new HttpFail(400, '* BatchEmbedContentsRequest.requests: requests is not specified');
    return sendJson(ctx.res, 200, { embeddings: b.requests.map((r: any) => ({ values: embeddingFor(textOf(r.content), r.outputDimensionality ?? 16) })) });
  }
  if (!b?.content) throw new HttpFail(400, '* EmbedContentRequest.content: content is not specified');
  void model;
  sendJson(ctx.res, 200, { embedding: { values: embeddingFor(textOf(b.content), b.outputDimensionality ?? 16) } });
}
