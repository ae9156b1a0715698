import { credentialSendable, deniedHeaderName, scrubSecrets } from '../../../src/mcp/credentials';

describe('MCP credentials', () => {
  it('scrubs a secret as given, URL-encoded, base64, JSON-escaped and by its lines', () => {
    const secret = 'sk live/ü+token\nsecond-line';
    const text = [secret, encodeURIComponent(secret), Buffer.from(secret).toString('base64'), Buffer.from(secret).toString('base64url'), JSON.stringify(secret), 'sk live/ü+token'].join(' | ');
    const out = scrubSecrets(text, [secret]);
    expect(out).not.toContain('sk live');
    expect(out).not.toContain('second-line');
    expect(out).not.toContain(Buffer.from(secret).toString('base64').slice(0, 12));
    expect(out).toContain('[redacted]');
    // Short pieces are left alone (they would redact ordinary words); other text is untouched.
    expect(scrubSecrets('a 401 from upstream', ['ab\n401'])).toBe('a 401 from upstream');
  });

  it('refuses framing, hop-by-hop and transport header names; accepts ordinary ones', () => {
    for (const name of ['Host', 'content-length', 'Transfer-Encoding', 'Connection', 'keep-alive', 'Upgrade', 'TE', 'Trailer', 'Proxy-Authorization', 'proxy-anything', 'Authorization', 'Mcp-Session-Id', 'X Api', 'X-Api:', '']) {
      expect({ name, denied: deniedHeaderName(name) !== null }).toEqual({ name, denied: true });
    }
    for (const name of ['X-Api-Key', 'x-goog-api-key', 'X_Custom.Token']) expect(deniedHeaderName(name)).toBeNull();
    expect(credentialSendable({ authorization: 'Bearer abc', 'x-api-key': 'v\tw' })).toBe(true);
    expect(credentialSendable({ authorization: 'Bearer abc\n' })).toBe(false);
    expect(credentialSendable({ 'content-length': '0' })).toBe(false);
  });
});
