/**
 * The JSON body of a model-input route (up to the body limit, 10 MiB by default), read as bytes and
 * parsed in steps with a turn of the event loop between them. koa-body decodes every chunk into a
 * string (megabytes of small strings the young-generation collector copies and promotes), joins them
 * for JSON.parse and scans the whole text again for `__proto__` keys: one stretch that held every
 * other request on the process. Here the chunks stay bytes until one decode, the parse runs in a
 * turn of its own, and `__proto__` keys are looked for in the parsed objects (what koa-body's
 * parser refuses, this refuses too).
 */
import { setImmediate as turn } from 'node:timers/promises';
import type { IncomingMessage } from 'node:http';
import getRawBody from 'raw-body';
import { ApiError } from '../errors';
import { decodeUtf8 } from '../../utf8';
import { MAX_JSON_DEPTH } from '../../json-depth';

/** Bodies above this size are decoded and parsed in turns of their own (a small one costs no turn). */
const TURN_ABOVE_BYTES = 256 * 1024;

const invalidJson = () => new ApiError(400, 'invalid_json', 'The request body is not valid JSON');
const tooLarge = () => new ApiError(413, 'payload_too_large', 'The request body exceeds the size limit');
const aborted = () => new ApiError(400, 'request_aborted', 'The client aborted the request body');

/** The body's bytes (raw-body: the chunks kept as bytes, one concat), refused once past `limit`. */
async function readBytes(req: IncomingMessage, limit: number): Promise<Buffer> {
  try {
    return await getRawBody(req, { limit });
  } catch (err) {
    const type = (err as { type?: string }).type;
    if (type === 'entity.too.large') throw tooLarge();
    if (type === 'request.aborted' || type === 'request.size.invalid') throw aborted();
    throw err;
  }
}

/** Nesting deeper than MAX_JSON_DEPTH, or an own `__proto__` key anywhere (one walk over the objects). */
function refusal(value: unknown): ApiError | null {
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length) {
    const [v, d] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    const depth = d + 1;
    if (depth > MAX_JSON_DEPTH) {
      return new ApiError(400, 'invalid_json', `The request body nests deeper than ${MAX_JSON_DEPTH} levels`, { details: { max_depth: MAX_JSON_DEPTH } });
    }
    if (Object.prototype.hasOwnProperty.call(v, '__proto__')) return invalidJson();
    for (const child of Array.isArray(v) ? v : Object.values(v as Record<string, unknown>)) {
      if (child !== null && typeof child === 'object') stack.push([child, depth]);
    }
  }
  return null;
}

/** A JSON object or array of at most `limit` bytes (an empty body reads as `{}`), as koa-body's strict JSON parser reads it. */
export async function readModelJson(req: IncomingMessage, limit: number): Promise<unknown> {
  const declared = Number(req.headers['content-length']);
  if (declared > limit) throw tooLarge();
  const bytes = await readBytes(req, limit);
  const large = bytes.length > TURN_ABOVE_BYTES;
  if (large) await turn();
  let text = decodeUtf8(bytes);
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  if (text === '') return {};
  // Strict: an object or an array after RFC 8259 whitespace.
  let i = 0;
  for (let c = text.charCodeAt(0); c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d; c = text.charCodeAt(++i));
  if (text[i] !== '{' && text[i] !== '[') throw invalidJson();
  if (large) await turn();
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw invalidJson();
  }
  const refused = refusal(value);
  if (refused) throw refused;
  return value;
}
