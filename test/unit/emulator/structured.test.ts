import Ajv from 'ajv';
import { anthropicToolCall, googleToolCall, openaiToolCall, valueFor } from '../../../emulator/structured';

const ajv = new Ajv({ strict: false });

describe('the emulator\'s structured answers (emulator/structured.ts)', () => {
  const schemas: [string, object][] = [
    ['scalars with bounds', { type: 'object', properties: { n: { type: 'integer', minimum: 5, maximum: 6 }, x: { type: 'number', exclusiveMinimum: 0, exclusiveMaximum: 2 }, s: { type: 'string', minLength: 20, maxLength: 30 }, b: { type: 'boolean' } }, required: ['n', 'x', 's', 'b'] }],
    ['enums, consts and formats', { type: 'object', properties: { e: { enum: ['a', 'b', 'c'] }, c: { const: 42 }, d: { type: 'string', format: 'date-time' }, m: { type: 'string', format: 'email' }, u: { type: 'string', format: 'uuid' } }, required: ['e', 'c', 'd', 'm', 'u'] }],
    ['arrays with item counts', { type: 'array', items: { type: 'string' }, minItems: 3, maxItems: 3 }],
    ['nullable unions and refs', { type: 'object', properties: { p: { anyOf: [{ type: 'null' }, { $ref: '#/$defs/p' }] }, q: { type: ['string', 'null'] } }, required: ['p', 'q'], $defs: { p: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] } } }],
    ['Gemini\'s upper-case types', { type: 'OBJECT', properties: { t: { type: 'STRING' }, k: { type: 'INTEGER' } } }],
  ];
  it.each(schemas)('%s: a valid value, the same for the same seed', (_name, schema) => {
    const v = valueFor(schema, 'seed-1');
    const lower = JSON.parse(JSON.stringify(schema).replace(/"(OBJECT|STRING|INTEGER)"/g, (_m, t: string) => `"${t.toLowerCase()}"`));
    expect(ajv.validate(lower, v)).toBe(true);
    expect(valueFor(schema, 'seed-1')).toEqual(v);
  });

  it('calls the forced tool, else the first; none and a tool result mean text', () => {
    const tools = [{ type: 'function', function: { name: 'a', parameters: {} } }, { type: 'function', function: { name: 'b', parameters: {} } }];
    const user = [{ role: 'user', content: 'x' }];
    expect(openaiToolCall({ tools, messages: user })?.name).toBe('a');
    expect(openaiToolCall({ tools, messages: user, tool_choice: { type: 'function', function: { name: 'b' } } })?.name).toBe('b');
    expect(openaiToolCall({ tools, messages: user, tool_choice: 'none' })).toBeNull();
    expect(openaiToolCall({ tools, messages: [...user, { role: 'tool', content: '1' }] })).toBeNull();
    expect(openaiToolCall({ messages: user })).toBeNull();
    const at = [{ name: 'a', input_schema: {} }, { name: 'b', input_schema: {} }];
    expect(anthropicToolCall({ tools: at, messages: user, tool_choice: { type: 'tool', name: 'b' } })?.name).toBe('b');
    expect(anthropicToolCall({ tools: at, messages: [...user, { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: 'ok' }] }] })).toBeNull();
    const gt = [{ functionDeclarations: [{ name: 'a' }, { name: 'b' }] }];
    expect(googleToolCall({ tools: gt, contents: [], toolConfig: { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['b'] } } })?.name).toBe('b');
    expect(googleToolCall({ tools: gt, contents: [], toolConfig: { functionCallingConfig: { mode: 'NONE' } } })).toBeNull();
  });
});
