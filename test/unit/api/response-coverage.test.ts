/**
 * Every JSON route documents its success body, so the e2e drift check (test/support/openapi-responses.ts)
 * validates every answer: a new JSON route comes with a `response` schema in its route-table entry
 * (src/api/route-table.ts), or this test names it.
 */
import { documentedRoutes } from '../../../src/api/openapi';

const UNCOVERED_MAX = 0;

describe('response schema coverage', () => {
  it('every JSON route has a response schema', () => {
    const uncovered = documentedRoutes()
      .filter((r) => !r.response && !r.contentType && r.status !== 204 && !r.nativeErrors)
      .map((r) => `${r.method.toUpperCase()} ${r.path}`);
    // The list goes to the test output so the gap is visible in every run.
    process.stdout.write(`routes without a response schema (${uncovered.length}):\n  ${uncovered.join('\n  ')}\n`);
    expect(uncovered.length).toBeLessThanOrEqual(UNCOVERED_MAX);
  });
});
