/**
 * Role-tagged text for the prompt firewall, built by the provider modules from native request
 * bodies. A plain string is user text; the system prompt and tool output are tagged, because the
 * firewall inspects them with a role-aware policy (see injection.ts detectInjection). No imports:
 * provider modules depend on this file only.
 */
export type InspectableText = string | { role: 'system' | 'user' | 'tool'; text: string };

const SYSTEM_ROLES = new Set(['system', 'developer']);
const TOOL_ROLES = new Set(['tool', 'function', 'ipython']);

/** The firewall item for a text written under a native role name (OpenAI, Anthropic, Gemini, Mistral, DeepSeek). */
export function roleText(role: unknown, text: string): InspectableText {
  if (typeof role === 'string') {
    if (SYSTEM_ROLES.has(role)) return { role: 'system', text };
    if (TOOL_ROLES.has(role)) return { role: 'tool', text };
  }
  // user, assistant (a client can forge earlier assistant turns), anything else: user text.
  return text;
}

export const textOfItem = (item: InspectableText): string => (typeof item === 'string' ? item : item.text);
