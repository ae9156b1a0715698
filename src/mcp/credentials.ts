/**
 * What an MCP server credential may be, and keeping it out of error text
 * (docs/decisions/managed-mcp-tool-calls.md). A credential is sent as one request header, so its
 * value must be a header value the HTTP client sends unchanged, and its name must not be a header that controls
 * the connection, the message framing or the MCP transport itself: a `Content-Length: 0` or a
 * `Transfer-Encoding` from a credential desynchronises the request, and a value with CR/LF/NUL is
 * refused by fetch with an error message that quotes the value.
 */

/** Printable ASCII with inner spaces or tabs; no control characters, no surrounding whitespace. */
export const HEADER_VALUE_PATTERN = /^[\x21-\x7e](?:[\x20-\x7e\t]*[\x21-\x7e])?$/;
export const HEADER_VALUE_MESSAGE = 'must be printable ASCII (inner spaces and tabs allowed): no control characters such as CR, LF or NUL, no leading or trailing whitespace';

/** RFC 9110 `token` (field-name). */
const TOKEN_PATTERN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * Header names a credential may not use: hop-by-hop and framing headers, those the MCP transport
 * sets itself, and `authorization` (the bearer credential type is for that).
 */
const DENIED_HEADERS = new Set([
  'host', 'content-length', 'transfer-encoding', 'connection', 'keep-alive', 'upgrade', 'te', 'trailer', 'expect',
  'content-type', 'accept', 'mcp-session-id', 'mcp-protocol-version', 'last-event-id',
  'authorization',
]);

/** Why `name` cannot carry a credential, or null when it can. */
export function deniedHeaderName(name: string): string | null {
  if (!TOKEN_PATTERN.test(name)) return 'must be an HTTP header name (RFC 9110 token)';
  const lower = name.toLowerCase();
  if (lower === 'authorization') return 'use the bearer credential type for Authorization';
  if (DENIED_HEADERS.has(lower) || lower.startsWith('proxy-')) return `${name} is a hop-by-hop, framing or transport header and cannot carry a credential`;
  return null;
}

/** Whether the stored credential can be sent as it is (servers registered before these rules). */
export function credentialSendable(headers: Record<string, string>): boolean {
  return Object.entries(headers).every(([name, value]) => (name === 'authorization' || deniedHeaderName(name) === null) && HEADER_VALUE_PATTERN.test(value));
}

const REDACTED = '[redacted]';

/**
 * The forms in which a secret can show up in upstream error text: as given, URL-encoded, base64
 * (standard and URL-safe, as in a Basic header), JSON-escaped, and its pieces between control
 * characters (an error may quote one line of a multi-line value). Pieces shorter than 4
 * characters are left alone: they would redact ordinary words.
 */
function secretForms(secret: string): string[] {
  const forms = new Set<string>([secret]);
  forms.add(encodeURIComponent(secret));
  const b64 = Buffer.from(secret, 'utf8').toString('base64');
  forms.add(b64);
  forms.add(b64.replace(/=+$/, ''));
  forms.add(Buffer.from(secret, 'utf8').toString('base64url'));
  forms.add(JSON.stringify(secret).slice(1, -1));
  // eslint-disable-next-line no-control-regex -- splitting on control characters is the point
  for (const piece of secret.split(/[\x00-\x1f\x7f]+/)) forms.add(piece.trim());
  return [...forms].filter((f) => f.length >= 4);
}

/** `text` with every form of every secret replaced by `[redacted]` (longest forms first). */
export function scrubSecrets(text: string, secrets: string[]): string {
  const forms = [...new Set(secrets.filter(Boolean).flatMap(secretForms))].sort((a, b) => b.length - a.length);
  let out = text;
  for (const f of forms) out = out.split(f).join(REDACTED);
  return out;
}
