/** Normalized → Anthropic Messages request (system separated, max_tokens always set). */
import type { NormalizedRequest } from '../types';
import { distinctNames, type NativeCall } from '../shared/module';
import { mergeOptions, refuse } from '../shared/openai-compat';
import { roleText, textOfItem, type InspectableText } from '../../governance/firewall/roles';

export const ANTHROPIC_MESSAGES_PATH = '/v1/messages';
export const ANTHROPIC_VERSION = '2023-06-01';
/** max_tokens sent when the caller set no max_output_tokens (Anthropic requires the field). */
export const ANTHROPIC_DEFAULT_MAX_TOKENS = 1024;

export async function buildAnthropicRequest(req: NormalizedRequest): Promise<NativeCall> {
  if (req.operation !== 'generate.text') refuse(`${req.operation} is not supported by anthropic`);
  const system: string[] = [];
  const messages: { role: 'user' | 'assistant'; content: string }[] = [];
  const turns = req.messages ?? [{ role: 'user' as const, content: (req.inputs ?? []).map((i) => (i.type === 'text' ? i.text ?? '' : refuse('anthropic accepts text inputs only here'))).join('\n') }];
  for (const m of turns) {
    if (m.role === 'system') system.push(m.content);
    else messages.push({ role: m.role, content: m.content });
  }
  const p = req.parameters ?? {};
  const body = mergeOptions(req, {
    model: req.model,
    system: system.length ? system.join('\n\n') : undefined,
    messages,
    max_tokens: p.max_output_tokens,
    temperature: p.temperature,
    top_p: p.top_p,
    stream: req.stream ? true : undefined,
  });
  body.max_tokens ??= ANTHROPIC_DEFAULT_MAX_TOKENS;
  return {
    method: 'POST',
    path: ANTHROPIC_MESSAGES_PATH,
    headers: { 'anthropic-version': ANTHROPIC_VERSION },
    body,
    bodyKind: 'json',
    responseKind: req.stream ? 'sse' : 'json',
  };
}

export function anthropicInspectableText(body: unknown): string[] {
  return anthropicInspectableItems(body).map(textOfItem);
}

/** The system prompt, message text and tool results of a Messages request, role-tagged for the firewall. */
export function anthropicInspectableItems(body: unknown): InspectableText[] {
  const b = body as Record<string, any>;
  const out: InspectableText[] = [];
  if (!b || typeof b !== 'object') return out;
  if (typeof b.system === 'string') out.push(roleText('system', b.system));
  else if (Array.isArray(b.system)) for (const s of b.system) if (typeof s?.text === 'string') out.push(roleText('system', s.text));
  for (const m of Array.isArray(b.messages) ? b.messages : []) {
    if (typeof m?.content === 'string') out.push(m.content);
    else if (Array.isArray(m?.content)) {
      for (const part of m.content) {
        if (part?.type === 'text' && typeof part.text === 'string') out.push(part.text);
        else if (part?.type === 'tool_result') {
          // Tool output: where indirect injections arrive (a string, or text blocks).
          if (typeof part.content === 'string') out.push(roleText('tool', part.content));
          else if (Array.isArray(part.content)) for (const c of part.content) if (c?.type === 'text' && typeof c.text === 'string') out.push(roleText('tool', c.text));
        }
      }
    }
  }
  return out;
}

/** The tools a Messages request offers, by name (server tools carry a name too). */
export function anthropicRequestTools(body: unknown): string[] {
  const tools = (body as { tools?: unknown } | null)?.tools;
  return Array.isArray(tools) ? distinctNames(tools.map((t: { name?: unknown } | null) => t?.name)) : [];
}
