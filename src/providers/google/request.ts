/**
 * Normalized → Gemini requests: generateContent / streamGenerateContent?alt=sse (text, image and
 * audio parts; URL assets as `fileData {fileUri, mimeType}`), embedContent / batchEmbedContents.
 */
import type { NormalizedRequest } from '../types';
import { distinctNames, jsonCall, type NativeCall } from '../shared/module';
import { refuse } from '../shared/openai-compat';
import { roleText, textOfItem, type InspectableText } from '../../governance/firewall/roles';

/** Prompt added to a transcribe.audio request that carries no instruction of its own. */
export const GOOGLE_TRANSCRIBE_PROMPT = 'Transcribe this audio verbatim. Reply with the transcript only.';

export const googleModelPath = (model: string) => `/v1beta/models/${encodeURIComponent(model.replace(/^models\//, ''))}`;

type Part = { text: string } | { fileData: { fileUri: string; mimeType: string } };

const DEFAULT_MIME: Record<string, string> = { image: 'image/png', audio: 'audio/mpeg' };

function contentsOf(req: NormalizedRequest): { contents: { role: string; parts: Part[] }[]; system: string[] } {
  if (req.messages) {
    const system = req.messages.filter((m) => m.role === 'system').map((m) => m.content);
    const contents = req.messages
      .filter((m) => m.role !== 'system')
      .map((m) => ({ role: m.role === 'assistant' ? 'model' : 'user', parts: [{ text: m.content }] }));
    return { contents, system };
  }
  const parts: Part[] = [];
  for (const i of req.inputs ?? []) {
    if (i.type === 'text') parts.push({ text: i.text ?? '' });
    else if (i.asset?.url) parts.push({ fileData: { fileUri: i.asset.url, mimeType: i.asset.mime_type ?? DEFAULT_MIME[i.type] } });
  }
  if (req.operation === 'transcribe.audio' && !parts.some((p) => 'text' in p)) parts.push({ text: GOOGLE_TRANSCRIBE_PROMPT });
  return { contents: [{ role: 'user', parts }], system: [] };
}

export async function buildGoogleRequest(req: NormalizedRequest): Promise<NativeCall> {
  const opts = { ...(req.providerOptions ?? {}) } as Record<string, any>;
  const base = googleModelPath(req.model);
  if (req.operation === 'embed.text') {
    const texts = req.messages ? req.messages.map((m) => m.content) : (req.inputs ?? []).map((i) => i.text ?? '');
    if (texts.length === 1) return jsonCall(`${base}:embedContent`, { ...opts, content: { parts: [{ text: texts[0] }] } });
    const name = `models/${req.model.replace(/^models\//, '')}`;
    return jsonCall(`${base}:batchEmbedContents`, { requests: texts.map((t) => ({ ...opts, model: name, content: { parts: [{ text: t }] } })) });
  }
  if (req.operation === 'generate.image' || req.operation === 'generate.audio') refuse(`${req.operation} is not supported by google`);
  const { contents, system } = contentsOf(req);
  const p = req.parameters ?? {};
  const generationConfig: Record<string, unknown> = { ...(opts.generationConfig ?? {}) };
  if (p.max_output_tokens !== undefined) generationConfig.maxOutputTokens = p.max_output_tokens;
  if (p.temperature !== undefined) generationConfig.temperature = p.temperature;
  if (p.top_p !== undefined) generationConfig.topP = p.top_p;
  const body: Record<string, unknown> = { ...opts, contents };
  if (system.length) body.systemInstruction = { parts: [{ text: system.join('\n\n') }] };
  if (Object.keys(generationConfig).length) body.generationConfig = generationConfig;
  else delete body.generationConfig;
  return req.stream ? jsonCall(`${base}:streamGenerateContent?alt=sse`, body, true) : jsonCall(`${base}:generateContent`, body);
}

export function googleInspectableText(body: unknown): string[] {
  return googleInspectableItems(body).map(textOfItem);
}

/** The system instruction, content text and function responses of a Gemini request, role-tagged for the firewall. */
export function googleInspectableItems(body: unknown): InspectableText[] {
  const b = body as Record<string, any>;
  const out: InspectableText[] = [];
  if (!b || typeof b !== 'object') return out;
  const fromContent = (c: any, role: unknown) => {
    for (const part of Array.isArray(c?.parts) ? c.parts : []) {
      if (typeof part?.text === 'string') out.push(roleText(role, part.text));
      // A function's result is tool output (where indirect injections arrive).
      else if (part?.functionResponse?.response !== undefined) out.push(roleText('tool', JSON.stringify(part.functionResponse.response)));
    }
  };
  fromContent(b.systemInstruction, 'system');
  for (const c of Array.isArray(b.contents) ? b.contents : []) fromContent(c, c?.role);
  fromContent(b.content, 'user');
  for (const r of Array.isArray(b.requests) ? b.requests : []) fromContent(r?.content, 'user');
  return out;
}

const DECLARATIONS = ['functionDeclarations', 'function_declarations'];

/** The tools a Gemini request offers: declared functions by name, built-in tools (googleSearch, codeExecution...) by their key. */
export function googleRequestTools(body: unknown): string[] {
  const tools = (body as { tools?: unknown } | null)?.tools;
  if (!Array.isArray(tools)) return [];
  const names: unknown[] = [];
  for (const t of tools) {
    if (!t || typeof t !== 'object') continue;
    for (const [key, value] of Object.entries(t as Record<string, unknown>)) {
      if (DECLARATIONS.includes(key)) names.push(...(Array.isArray(value) ? value.map((f: { name?: unknown } | null) => f?.name) : []));
      else names.push(key);
    }
  }
  return distinctNames(names);
}
