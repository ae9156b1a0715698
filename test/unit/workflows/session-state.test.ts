import { SessionActor } from '../../../workflows/session-state';
import type { SessionSnapshot } from '../../../workflows/session-messages';
import { realtimeCostMicros } from '../../../src/pricing/realtime';
import { usageFromResponseDone } from '../../../src/voice/realtime';

const snapshot = (limits: Partial<SessionSnapshot['limits']> = {}): SessionSnapshot => ({
  projectId: 'p', sessionId: 's', status: 'active',
  limits: { maxTurns: null, maxCostMicros: null, expiresAtMs: null, idleTimeoutMs: 1000, ...limits },
  turns: 0, spentMicros: 0, reservations: {}, lastActivityMs: 0, endReason: null, run: 1, totalUpdatesHandled: 0, persisted: { turns: 0, spentMicros: 0 },
});

describe('SessionActor', () => {
  it('grants turns up to max_turns; a release gives one back; a re-sent grant is not counted twice', () => {
    const a = new SessionActor(snapshot({ maxTurns: 2 }));
    expect(a.apply({ kind: 'turn', id: 't1', estimateMicros: 0 }, 1)).toMatchObject({ granted: true, turnNumber: 1 });
    expect(a.apply({ kind: 'turn', id: 't1', estimateMicros: 0 }, 2).turns).toBe(1);
    expect(a.apply({ kind: 'turn', id: 't2', estimateMicros: 0 }, 3)).toMatchObject({ granted: true, turnNumber: 2 });
    expect(a.apply({ kind: 'turn', id: 't3', estimateMicros: 0 }, 4)).toMatchObject({ granted: false, reason: 'max_turns_reached' });
    a.apply({ kind: 'release', id: 't2' }, 5);
    expect(a.apply({ kind: 'turn', id: 't3', estimateMicros: 0 }, 6)).toMatchObject({ granted: true, turnNumber: 2 });
  });

  it('counts settled and reserved spend against max_cost; settles once', () => {
    const a = new SessionActor(snapshot({ maxCostMicros: 100 }));
    expect(a.apply({ kind: 'turn', id: 't1', estimateMicros: 60 }, 1).granted).toBe(true);
    expect(a.apply({ kind: 'action', id: 'a1', estimateMicros: 50 }, 2)).toMatchObject({ granted: false, reason: 'max_cost_exceeded' });
    a.apply({ kind: 'settle', id: 't1', actualMicros: 30 }, 3);
    a.apply({ kind: 'settle', id: 't1', actualMicros: 999 }, 4);
    expect(a.s.spentMicros).toBe(30);
    expect(a.apply({ kind: 'action', id: 'a1', estimateMicros: 70 }, 5)).toMatchObject({ granted: true, reservedMicros: 70 });
  });

  it('expires at the earlier of idle timeout and max duration; activity pushes the idle timeout', () => {
    const a = new SessionActor(snapshot({ idleTimeoutMs: 1000, expiresAtMs: 5000 }));
    expect(a.nextExpiry()).toEqual({ atMs: 1000, reason: 'idle_timeout' });
    a.apply({ kind: 'touch' }, 4500);
    expect(a.nextExpiry()).toEqual({ atMs: 5000, reason: 'max_duration_reached' });
    a.close('expired', 'max_duration_reached');
    expect(a.apply({ kind: 'turn', id: 'late', estimateMicros: 0 }, 6000)).toMatchObject({ granted: false, reason: 'not_active' });
  });
});

describe('realtime pricing', () => {
  it('prices text and audio tokens separately, cached at their own price, rounded up once', () => {
    // gpt-realtime: text 4 / 0.4 / 16, audio 32 / 0.4 / 64 USD per 1M tokens.
    const u = { text_input_tokens: 100, cached_text_input_tokens: 0, audio_input_tokens: 1000, cached_audio_input_tokens: 200, text_output_tokens: 50, audio_output_tokens: 500 };
    expect(realtimeCostMicros('openai', 'gpt-realtime', u)).toBe(400 + 800 * 32 + 80 + 800 + 32_000);
    expect(realtimeCostMicros('openai', 'gpt-realtime-2025-08-28', u)).toBe(58_880);
    expect(realtimeCostMicros('openai', 'gpt-realtime', { ...u, text_input_tokens: 1, audio_input_tokens: 0, cached_audio_input_tokens: 0, text_output_tokens: 0, audio_output_tokens: 0 })).toBe(4);
    expect(realtimeCostMicros('openai', 'no-such-model', u)).toBeNull();
  });

  it('maps response.done usage details to meters', () => {
    expect(
      usageFromResponseDone({
        input_tokens: 1100, output_tokens: 550,
        input_token_details: { text_tokens: 100, audio_tokens: 1000, cached_tokens: 200, cached_tokens_details: { text_tokens: 0, audio_tokens: 200 } },
        output_token_details: { text_tokens: 50, audio_tokens: 500 },
      }),
    ).toEqual({ input_tokens: 100, input_audio_tokens: 1000, cached_input_tokens: 0, cached_input_audio_tokens: 200, output_tokens: 50, output_audio_tokens: 500 });
    expect(usageFromResponseDone({ input_tokens: 10, output_tokens: 5 })).toMatchObject({ input_tokens: 10, output_tokens: 5, input_audio_tokens: 0 });
  });
});
