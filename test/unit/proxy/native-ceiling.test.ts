/** Hard caps on the proxies: the ceiling goes into the native body's own field, nothing else changes. */
import { withNativeCeiling } from '../../../src/proxy/native-ceiling';

describe('withNativeCeiling', () => {
  const messages = [{ role: 'user', content: 'hi' }];

  it('sets every ceiling field the body has, or adds the provider\'s own', () => {
    expect(withNativeCeiling('openai', '/v1/chat/completions', { model: 'm', messages, max_tokens: 9000 }, 300)).toEqual({ model: 'm', messages, max_tokens: 300 });
    expect(withNativeCeiling('openai', '/v1/chat/completions', { model: 'm', messages, max_tokens: 9000, max_completion_tokens: 8000 }, 300)).toEqual({ model: 'm', messages, max_tokens: 300, max_completion_tokens: 300 });
    expect(withNativeCeiling('openai', '/v1/chat/completions', { model: 'm', messages }, 300)).toEqual({ model: 'm', messages, max_completion_tokens: 300 });
    expect(withNativeCeiling('openai', '/v1/responses', { model: 'm', input: 'hi' }, 300)).toEqual({ model: 'm', input: 'hi', max_output_tokens: 300 });
    expect(withNativeCeiling('anthropic', '/v1/messages', { model: 'm', messages, max_tokens: 9000 }, 300)).toEqual({ model: 'm', messages, max_tokens: 300 });
    expect(withNativeCeiling('deepseek', '/chat/completions', { model: 'm', messages }, 300)).toEqual({ model: 'm', messages, max_tokens: 300 });
    expect(withNativeCeiling('mistral', '/v1/chat/completions', { model: 'm', messages }, 300)).toEqual({ model: 'm', messages, max_tokens: 300 });
  });

  it('Gemini: generationConfig.maxOutputTokens (kept beside its other settings), or the snake-case field the body used', () => {
    const contents = [{ role: 'user', parts: [{ text: 'hi' }] }];
    expect(withNativeCeiling('google', '/v1beta/models/g:generateContent', { contents, generationConfig: { temperature: 0.1 } }, 300)).toEqual({ contents, generationConfig: { temperature: 0.1, maxOutputTokens: 300 } });
    expect(withNativeCeiling('google', '/v1beta/models/g:generateContent', { contents }, 300)).toEqual({ contents, generationConfig: { maxOutputTokens: 300 } });
    expect(withNativeCeiling('google', '/v1beta/models/g:generateContent', { contents, generation_config: { max_output_tokens: 5000 } }, 300)).toEqual({ contents, generation_config: { max_output_tokens: 300 } });
  });

  it('does not modify the caller\'s object', () => {
    const body = { model: 'm', messages, max_tokens: 9000 };
    withNativeCeiling('openai', '/v1/chat/completions', body, 300);
    expect(body.max_tokens).toBe(9000);
  });
});
