/**
 * OpenAI Realtime events relayed by the caller (POST /v1/voice/sessions/{session_id}/events). The
 * model traffic goes straight to the provider; Tollgate governs from these events:
 * - `conversation.item.input_audio_transcription.completed`: the user's turn (the transcript goes
 *   through the firewall, the turn is decided before the model answers);
 * - `response.done`: its usage is authoritative; it settles the open turn (or is a turn itself);
 *   a cancelled response is also recorded as an interruption;
 * - `input_audio_buffer.speech_started`: caller speech (activity; recorded);
 * - `error`: recorded. Anything else is accepted and ignored.
 * Decisions: docs/decisions/voice-events.md.
 */
import { z } from 'zod';
import { appendEvent } from '../db/repositories/events';
import { findOpenTurn, findTurnByResponseId } from '../db/repositories/session-turns';
import type { SessionRecord } from '../db/repositories/sessions';
import { sessionEvent } from '../sessions/events';
import type { SessionServiceDeps } from '../sessions/service';
import { sessionNotActive } from '../sessions/service';
import type { UsageBody } from '../sessions/schemas';
import { applyOp, settleTurn, takeTurn } from '../sessions/turns';
import { turnView } from '../sessions/view';

const count = z.number().int().min(0).max(1_000_000_000).optional();

export const realtimeEventSchema = z.looseObject({ type: z.string().min(1).max(200), event_id: z.string().max(200).optional() });
export const voiceEventsSchema = z.union([realtimeEventSchema, z.object({ events: z.array(realtimeEventSchema).min(1).max(100) }).strict()]);

const transcriptionSchema = z.looseObject({ item_id: z.string().min(1).max(100), transcript: z.string().max(1_000_000) });
const responseDoneSchema = z.looseObject({
  response: z.looseObject({
    id: z.string().min(1).max(100),
    status: z.string().max(50).optional(),
    usage: z
      .looseObject({
        input_tokens: count,
        output_tokens: count,
        input_token_details: z.looseObject({ text_tokens: count, audio_tokens: count, cached_tokens: count, cached_tokens_details: z.looseObject({ text_tokens: count, audio_tokens: count }).optional() }).optional(),
        output_token_details: z.looseObject({ text_tokens: count, audio_tokens: count }).optional(),
      })
      .nullable()
      .optional(),
  }),
});

type RealtimeUsage = NonNullable<z.infer<typeof responseDoneSchema>['response']['usage']>;

/** response.done usage → the session's usage meters (text and audio, cached apart). */
export function usageFromResponseDone(u: RealtimeUsage): UsageBody {
  const inD = u.input_token_details;
  const outD = u.output_token_details;
  const cached = inD?.cached_tokens_details;
  return {
    input_tokens: inD ? (inD.text_tokens ?? 0) : (u.input_tokens ?? 0),
    input_audio_tokens: inD?.audio_tokens ?? 0,
    cached_input_tokens: cached?.text_tokens ?? (inD && !cached ? (inD.cached_tokens ?? 0) : 0),
    cached_input_audio_tokens: cached?.audio_tokens ?? 0,
    output_tokens: outD ? (outD.text_tokens ?? 0) : (u.output_tokens ?? 0),
    output_audio_tokens: outD?.audio_tokens ?? 0,
  };
}

export interface VoiceEventResult {
  type: string;
  event_id: string | null;
  handled: boolean;
  outcome: 'turn' | 'settled' | 'recorded' | 'ignored' | 'invalid';
  turn?: unknown;
  error?: string;
}

export async function handleRealtimeEvent(deps: SessionServiceDeps, s: SessionRecord, ev: z.infer<typeof realtimeEventSchema>): Promise<VoiceEventResult> {
  const base = { type: ev.type, event_id: ev.event_id ?? null };
  const at = () => deps.clock.now();
  switch (ev.type) {
    case 'conversation.item.input_audio_transcription.completed': {
      const p = transcriptionSchema.safeParse(ev);
      if (!p.success) return { ...base, handled: false, outcome: 'invalid', error: 'item_id and transcript are required' };
      const r = await takeTurn(deps, s, { turn_id: p.data.item_id, role: 'user', transcript: p.data.transcript });
      return { ...base, handled: true, outcome: 'turn', turn: r.body };
    }
    case 'response.done': {
      const p = responseDoneSchema.safeParse(ev);
      if (!p.success) return { ...base, handled: false, outcome: 'invalid', error: 'response.id is required' };
      const r = p.data.response;
      const usage = usageFromResponseDone(r.usage ?? {});
      if (r.status === 'cancelled') {
        await appendEvent(deps.db, sessionEvent(s, 'session.interrupted', { type: 'cancel', response_id: r.id, source: 'response.done' }, { at: at() }));
      }
      const seen = await findTurnByResponseId(deps.db, s.id, r.id);
      if (seen) return { ...base, handled: true, outcome: 'settled', turn: turnView(seen) };
      const open = await findOpenTurn(deps.db, s.id);
      if (open) {
        const settled = await settleTurn(deps, s, open, { usage, responseId: r.id });
        return { ...base, handled: true, outcome: 'settled', turn: turnView(settled) };
      }
      // No turn waits for this response (e.g. a response the server started on its own): it is a turn with its usage.
      const t = await takeTurn(deps, s, { turn_id: r.id, role: 'assistant', usage });
      return { ...base, handled: true, outcome: 'turn', turn: t.body };
    }
    case 'input_audio_buffer.speech_started': {
      if (s.status !== 'active') throw sessionNotActive(s.id, s.status);
      await applyOp(deps, s, { kind: 'touch' });
      const meta = { item_id: typeof ev.item_id === 'string' ? ev.item_id.slice(0, 100) : null, audio_start_ms: typeof ev.audio_start_ms === 'number' ? ev.audio_start_ms : null };
      await appendEvent(deps.db, sessionEvent(s, 'session.speech_started', meta, { at: at() }));
      return { ...base, handled: true, outcome: 'recorded' };
    }
    case 'error': {
      const e = (ev.error ?? {}) as Record<string, unknown>;
      const meta = { code: typeof e.code === 'string' ? e.code.slice(0, 100) : null, error_type: typeof e.type === 'string' ? e.type.slice(0, 100) : null, message: typeof e.message === 'string' ? e.message.slice(0, 500) : null };
      await appendEvent(deps.db, sessionEvent(s, 'session.provider_error', meta, { at: at() }));
      return { ...base, handled: true, outcome: 'recorded' };
    }
    default:
      return { ...base, handled: false, outcome: 'ignored' };
  }
}
