/**
 * The members `keys` of `value`, in the order of `keys`: one list of fields where two shapes state
 * the same members of one concept (a permit's decision, an amendment's change).
 */
export function pick<T extends object, K extends keyof T>(value: T, keys: readonly K[]): Pick<T, K> {
  const out = {} as Pick<T, K>;
  for (const k of keys) out[k] = value[k];
  return out;
}
