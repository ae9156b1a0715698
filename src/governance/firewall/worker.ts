/**
 * Worker-thread entry of the firewall pool (pool.ts): inspects one text list per message with every
 * detector on; the caller filters the rule ids by the project's toggles.
 */
import { parentPort } from 'node:worker_threads';
import { inspectAllDetectors, type InspectableText } from './index';

parentPort?.on('message', (msg: { id: number; texts: InspectableText[] }) => {
  try {
    parentPort!.postMessage({ id: msg.id, ruleIds: inspectAllDetectors(msg.texts) });
  } catch (err) {
    parentPort!.postMessage({ id: msg.id, error: String((err as Error)?.message ?? err) });
  }
});
