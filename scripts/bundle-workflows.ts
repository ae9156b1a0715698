// `npm run build`: bundles workflow code once so production workers start without webpack.
import fs from 'node:fs';
import path from 'node:path';
import { bundleWorkflows } from '../src/temporal/worker';

(async () => {
  const out = path.resolve(__dirname, '..', 'dist', 'workflow-bundle.js');
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, await bundleWorkflows());
  console.log(`workflow bundle written to ${out}`);
})();
