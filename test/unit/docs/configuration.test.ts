/**
 * docs/configuration.md is the reference of every setting: this holds it equal to the schemas that
 * parse the environment (src/config.ts, src/api/middleware/http-limits.ts), so a setting cannot be
 * added, renamed or given another default without the page saying so.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { z } from 'zod';
import { envSchema } from '../../../src/config';
import { httpLimitsEnvSchema } from '../../../src/api/middleware/http-limits';

const PAGE = path.join(__dirname, '../../../docs/configuration.md');
/** The heading after which the page lists variables that no schema reads. */
const OUTSIDE = '## Read outside the settings schemas';

const schemas: Record<string, z.ZodType>[] = [envSchema.shape, httpLimitsEnvSchema.shape];
const schemaKeys = new Map<string, z.ZodType>(schemas.flatMap((s) => Object.entries(s)));

/** The rows of the settings tables: variable name (first cell) and default (third cell). */
function documentedRows(): { name: string; defaultCell: string }[] {
  const text = readFileSync(PAGE, 'utf8');
  const end = text.indexOf(OUTSIDE);
  expect(end).toBeGreaterThan(0);
  return text
    .slice(0, end)
    .split('\n')
    .filter((line) => line.startsWith('| `'))
    .map((line) => {
      const cells = line.split('|').map((c) => c.trim());
      const name = /^`([A-Z0-9_]+)`$/.exec(cells[1]);
      if (!name) throw new Error(`a settings row must name one variable in its first cell: ${line}`);
      return { name: name[1], defaultCell: cells[3] };
    });
}

describe('docs/configuration.md', () => {
  const rows = documentedRows();
  const documented = new Set(rows.map((r) => r.name));

  it('documents every setting of the schemas', () => {
    const missing = [...schemaKeys.keys()].filter((k) => !documented.has(k));
    expect(missing).toEqual([]);
  });

  it('documents no setting the schemas do not read, and each once', () => {
    const unknown = [...documented].filter((k) => !schemaKeys.has(k));
    expect(unknown).toEqual([]);
    expect(rows.length).toBe(documented.size);
  });

  it("states each setting's default as the schema applies it", () => {
    const wrong: string[] = [];
    for (const { name, defaultCell } of rows) {
      const parsed = schemaKeys.get(name)!.safeParse(undefined);
      if (!parsed.success) {
        wrong.push(`${name}: the schema refuses an unset value`);
        continue;
      }
      const value: unknown = parsed.data;
      if (defaultCell.startsWith('—')) {
        const none = value === undefined || value === '' || (Array.isArray(value) && value.length === 0);
        if (!none) wrong.push(`${name}: documented without a default, the schema's is ${JSON.stringify(value)}`);
      } else {
        const shown = /^`([^`]*)`$/.exec(defaultCell)?.[1];
        if (shown !== String(value)) wrong.push(`${name}: documented default ${defaultCell}, the schema's is ${JSON.stringify(value)}`);
      }
    }
    expect(wrong).toEqual([]);
  });
});
