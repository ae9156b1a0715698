/**
 * A bench entry point and its modes: `npm run bench:<name> -- --<mode> [arguments]`. Without a mode
 * flag the entry point's default mode runs; `--help` lists the modes. A mode's module is loaded only
 * when it runs, so a mode pays for no other mode's imports.
 */

export interface Mode {
  /** One line for `--help`: what the mode measures. */
  about: string;
  /** The mode's arguments, for `--help` (e.g. `<checkout>`). */
  usage?: string;
  /** Runs the mode with the arguments after its flag. */
  run(args: string[]): Promise<unknown>;
}

export function runModes(entry: string, modes: Record<string, Mode>, defaultMode: string): void {
  const [first, ...rest] = process.argv.slice(2);
  const help = () =>
    [
      `usage: npm run ${entry} -- [--<mode> [arguments]]   (default: --${defaultMode})`,
      ...Object.entries(modes).map(([name, m]) => `  --${`${name}${m.usage ? ` ${m.usage}` : ''}`.padEnd(26)} ${m.about}`),
      'Knobs (BENCH_* variables): docs/performance.md and each mode\'s header comment.',
    ].join('\n');
  if (first === '--help' || first === '-h') {
    console.log(help());
    return;
  }
  const chosen = first?.startsWith('--') ? first.slice(2) : undefined;
  if (chosen !== undefined && !Object.hasOwn(modes, chosen)) {
    console.error(`unknown mode ${first}\n${help()}`);
    process.exit(2);
  }
  const args = chosen === undefined ? (first === undefined ? [] : [first, ...rest]) : rest;
  modes[chosen ?? defaultMode].run(args).catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
