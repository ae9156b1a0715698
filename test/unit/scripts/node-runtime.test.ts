import { MIN_NODE_MAJOR, NODE_RUNTIME } from '../../../scripts/lib/versions';
import pkg from '../../../package.json';

/** The suite runs on a supported Node: the machine's own when recent enough, else the pinned runtime (scripts/run.cjs). */
describe('Node runtime', () => {
  it('is at least the supported major', () => {
    expect(Number(process.versions.node.split('.')[0])).toBeGreaterThanOrEqual(MIN_NODE_MAJOR);
  });

  it('is the pinned runtime when scripts/run.cjs brought one', () => {
    if (!process.env.TOLLGATE_NODE_RUNTIME) return;
    expect(process.versions.node).toBe(NODE_RUNTIME.node);
    expect(process.execPath.startsWith(process.env.TOLLGATE_NODE_RUNTIME)).toBe(true);
  });

  it('agrees with package.json engines and the pin', () => {
    expect(pkg.engines.node).toBe(`>=${MIN_NODE_MAJOR}`);
    expect(Number(NODE_RUNTIME.node.split('.')[0])).toBeGreaterThanOrEqual(MIN_NODE_MAJOR);
  });
});
