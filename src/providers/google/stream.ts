/** Gemini `streamGenerateContent?alt=sse`: each `data:` is a GenerateContentResponse; the last has finishReason and full usageMetadata. */
import type { Usage } from '../types';
import { StreamErrorEvent, parseEventJson, type SseEvent, type StreamParser, type StreamSnapshot } from '../shared/module';
import { makeUsage } from '../shared/usage';
import { candidateText, candidateToolCalls, googleUsageCounts } from './response';

export function createGoogleStreamParser(): StreamParser {
  const state: StreamSnapshot = { usage: null, finish_reason: null, tool_calls: [], model: null, done: false };
  return {
    push(ev: SseEvent): string[] {
      const data = parseEventJson(ev);
      if (data?.error) throw new StreamErrorEvent(data, typeof data.error.code === 'number' ? data.error.code : null);
      if (typeof data.modelVersion === 'string') state.model = data.modelVersion;
      const usage = googleUsageCounts(data.usageMetadata);
      if (usage) state.usage = usage;
      const finish = data.candidates?.[0]?.finishReason;
      if (finish) {
        state.finish_reason = finish;
        state.done = true;
      }
      state.tool_calls.push(...candidateToolCalls(data));
      const text = candidateText(data);
      return text ? [text] : [];
    },
    // Intermediate chunks may carry partial usageMetadata; only a finished stream's usage is final.
    snapshot: () => ({ ...state, usage: state.done ? state.usage : null }),
  };
}

export function extractGoogleStreamUsage(events: SseEvent[]): Usage | null {
  let last = null;
  for (const ev of events) {
    try {
      last = googleUsageCounts(JSON.parse(ev.data)?.usageMetadata) ?? last;
    } catch {
      /* skip */
    }
  }
  return last ? makeUsage(last) : null;
}
