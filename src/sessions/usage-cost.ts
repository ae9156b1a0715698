/** Cost of a turn's reported usage: text and audio tokens (realtime prices, src/pricing/realtime.ts). */
import { realtimeCostMicros, type RealtimeUsage } from '../pricing/realtime';
import type { ProviderId } from '../providers/types';
import type { UsageBody } from './schemas';

export function realtimeUsageOf(u: UsageBody): RealtimeUsage {
  return {
    text_input_tokens: u.input_tokens ?? 0,
    cached_text_input_tokens: u.cached_input_tokens ?? 0,
    audio_input_tokens: u.input_audio_tokens ?? 0,
    cached_audio_input_tokens: u.cached_input_audio_tokens ?? 0,
    text_output_tokens: u.output_tokens ?? 0,
    audio_output_tokens: u.output_audio_tokens ?? 0,
  };
}

/** Micro-USD of the usage at the session's model; null when the model has no price. */
export function usageCostMicros(provider: string, model: string, u: UsageBody): number | null {
  return realtimeCostMicros(provider as ProviderId, model, realtimeUsageOf(u));
}

/** The usage as stored and shown (every meter, zeros included, plus the total). */
export function usageRecord(u: UsageBody): Record<string, number> {
  const r = realtimeUsageOf(u);
  return {
    input_tokens: r.text_input_tokens,
    cached_input_tokens: r.cached_text_input_tokens,
    input_audio_tokens: r.audio_input_tokens,
    cached_input_audio_tokens: r.cached_audio_input_tokens,
    output_tokens: r.text_output_tokens,
    output_audio_tokens: r.audio_output_tokens,
    total_tokens: r.text_input_tokens + r.audio_input_tokens + r.text_output_tokens + r.audio_output_tokens,
  };
}
