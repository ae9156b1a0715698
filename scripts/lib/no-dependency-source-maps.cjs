/**
 * Preloaded, after tsx, wherever Tollgate runs from TypeScript (scripts/lib/source-node-args.ts).
 * tsx turns on Node's source-map support so that stack traces name our .ts lines; Node then also
 * reads, parses and keeps the source map of every dependency file that names one (Temporal's,
 * protobufjs', OpenTelemetry's: ~20 MiB of the Tollgate process, docs/decisions/dev-stack-runs-compiled-code.md). A
 * dependency's frames are fine as compiled JavaScript, as production shows them, so this drops the
 * `sourceMappingURL` comment from CommonJS files under node_modules as they load.
 */
const path = require('node:path');
const { addHook } = require('pirates');

const IN_DEPENDENCY = `${path.sep}node_modules${path.sep}`;
const MAP_COMMENT = /\n\/\/# sourceMappingURL=\S*\s*$/;

addHook((code) => code.replace(MAP_COMMENT, '\n'), {
  exts: ['.js'],
  ignoreNodeModules: false,
  matcher: (filename) => filename.includes(IN_DEPENDENCY),
});
