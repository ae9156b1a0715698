/**
 * fast-check arbitraries from a JSON Schema (the draft 2020-12 subset z.toJSONSchema emits):
 * valid-shaped values of a route's body or query, which the fuzz tests then mutate.
 */
import fc from 'fast-check';

export interface JsonSchema {
  type?: string | string[];
  enum?: unknown[];
  const?: unknown;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  propertyNames?: JsonSchema;
  items?: JsonSchema | boolean;
  prefixItems?: JsonSchema[];
  minItems?: number;
  maxItems?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  format?: string;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  $ref?: string;
  $defs?: Record<string, JsonSchema>;
  default?: unknown;
}

/** Small sizes: the point is shape coverage, not volume (huge values come from the hostile mutators). */
const MAX_ITEMS = 3;
const MAX_STRING = 24;
const MAX_DEPTH = 6;

export function arbitraryFromSchema(root: JsonSchema): fc.Arbitrary<unknown> {
  const defs = root.$defs ?? {};
  const resolve = (s: JsonSchema): JsonSchema => {
    if (!s.$ref) return s;
    const name = s.$ref.replace(/^#\/\$defs\//, '');
    return defs[name] ?? {};
  };
  const build = (raw: JsonSchema | boolean | undefined, depth: number): fc.Arbitrary<unknown> => {
    if (raw === undefined || raw === true) return depth > MAX_DEPTH ? fc.constant(null) : fc.jsonValue({ maxDepth: 2 });
    if (raw === false) return fc.constant(undefined);
    const s = resolve(raw);
    if (depth > MAX_DEPTH) return fc.constant(s.default ?? null);
    if (s.const !== undefined) return fc.constant(s.const);
    if (s.enum) return fc.constantFrom(...s.enum);
    const alternatives = s.anyOf ?? s.oneOf;
    if (alternatives?.length) return fc.oneof(...alternatives.map((a) => build(a, depth + 1)));
    if (s.allOf?.length) return build(Object.assign({}, ...s.allOf.map(resolve)), depth);
    const types = Array.isArray(s.type) ? s.type : s.type ? [s.type] : inferTypes(s);
    if (types.length > 1) return fc.oneof(...types.map((t) => build({ ...s, type: t }, depth)));
    switch (types[0]) {
      case 'string':
        return stringArb(s);
      case 'integer':
        return fc.integer({ min: boundMin(s, -1e6), max: boundMax(s, 1e6) });
      case 'number':
        return fc.double({ min: boundMin(s, -1e6), max: boundMax(s, 1e6), noNaN: true, noDefaultInfinity: true });
      case 'boolean':
        return fc.boolean();
      case 'null':
        return fc.constant(null);
      case 'array': {
        if (s.prefixItems?.length) return fc.tuple(...s.prefixItems.map((p) => build(p, depth + 1)));
        const minLength = s.minItems ?? 0;
        return fc.array(build(s.items, depth + 1), { minLength, maxLength: Math.max(minLength, Math.min(s.maxItems ?? MAX_ITEMS, MAX_ITEMS)) });
      }
      case 'object':
        return objectArb(s, depth, build);
      default:
        return fc.jsonValue({ maxDepth: 2 });
    }
  };
  return build(root, 0);
}

function inferTypes(s: JsonSchema): string[] {
  if (s.properties || s.additionalProperties !== undefined) return ['object'];
  if (s.items || s.prefixItems) return ['array'];
  if (s.pattern || s.minLength !== undefined || s.format) return ['string'];
  return [];
}

function boundMin(s: JsonSchema, fallback: number): number {
  if (s.exclusiveMinimum !== undefined) return s.exclusiveMinimum + 1;
  return Math.max(s.minimum ?? fallback, -Number.MAX_SAFE_INTEGER);
}

function boundMax(s: JsonSchema, fallback: number): number {
  if (s.exclusiveMaximum !== undefined) return s.exclusiveMaximum - 1;
  return Math.min(s.maximum ?? fallback, Number.MAX_SAFE_INTEGER);
}

const EPOCH_2020 = Date.UTC(2020, 0, 1);
const EPOCH_2030 = Date.UTC(2030, 0, 1);

function stringArb(s: JsonSchema): fc.Arbitrary<string> {
  if (s.format === 'date-time') return fc.integer({ min: EPOCH_2020, max: EPOCH_2030 }).map((t) => new Date(t).toISOString());
  if (s.format === 'uri' || s.format === 'url') return fc.webUrl();
  if (s.format === 'email') return fc.emailAddress();
  const minLength = s.minLength ?? 0;
  const maxLength = Math.max(minLength, Math.min(s.maxLength ?? MAX_STRING, MAX_STRING));
  if (s.pattern) {
    const re = new RegExp(s.pattern);
    return fc.stringMatching(re).filter((v) => v.length >= minLength && v.length <= (s.maxLength ?? Infinity));
  }
  return fc.string({ minLength, maxLength, unit: 'grapheme' });
}

function objectArb(s: JsonSchema, depth: number, build: (s: JsonSchema | boolean | undefined, depth: number) => fc.Arbitrary<unknown>): fc.Arbitrary<unknown> {
  const props = s.properties ?? {};
  const required = (s.required ?? []).filter((k) => k in props);
  const known = fc.record(
    Object.fromEntries(Object.entries(props).map(([k, v]) => [k, build(v, depth + 1)])),
    { requiredKeys: required },
  );
  const extra = s.additionalProperties;
  if (extra === false || (extra === undefined && Object.keys(props).length)) return known;
  const keyArb = s.propertyNames ? (stringArb(s.propertyNames) as fc.Arbitrary<string>) : fc.string({ minLength: 1, maxLength: 12 });
  const more = fc.dictionary(keyArb, build(extra === undefined ? true : extra, depth + 1), { maxKeys: 3 });
  return fc.tuple(known, more).map(([a, b]) => ({ ...b, ...(a as object) }));
}
