/** The seeded generator (mulberry32) of the synthetic cases, and the alphabets they draw from. */
export function rng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)];
  const chars = (alphabet: string, n: number) => Array.from({ length: n }, () => alphabet[int(alphabet.length)]).join('');
  return { next, int, pick, chars };
}
export type Rng = ReturnType<typeof rng>;

export const UP = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
export const LO = 'abcdefghijklmnopqrstuvwxyz';
export const DIG = '0123456789';
export const AN = UP + LO + DIG;
export const HEX = '0123456789abcdef';
export const B64 = AN + '+/';
export const URLSAFE = AN + '-_';
