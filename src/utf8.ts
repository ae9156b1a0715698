import { isAscii } from 'node:buffer';

/**
 * UTF-8 bytes as a string. ASCII bytes (most request bodies, prompts of the body limit's size
 * included) are copied as Latin-1, which is the same string: a copy where the UTF-8 decoder reads
 * every byte, about a tenth of the time at megabytes.
 */
export function decodeUtf8(bytes: Buffer): string {
  return isAscii(bytes) ? bytes.toString('latin1') : bytes.toString('utf8');
}
