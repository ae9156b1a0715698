import nodeRuntime from '../node-runtime.json';

/** The Temporal CLI release Tollgate builds and runs; pinned here and nowhere else. */
export const TEMPORAL_CLI_VERSION = '1.5.1';

/**
 * The OpenTelemetry Collector release the OTLP test receiver is built from (scripts/otelcol/go.mod
 * requires every collector module at this release, its stable modules at the matching v1); it
 * names the cache directory, so a change of release rebuilds it.
 */
export const OTEL_COLLECTOR_VERSION = '0.165.0';

/**
 * The Node runtime `npm run dev`, `npm test` and `npm run cli` bring when the machine's Node is
 * older than MIN_NODE_MAJOR (the oldest the code supports). Both are pinned in
 * scripts/node-runtime.json, not here: scripts/run.cjs reads that before any dependency
 * (TypeScript included) is installed.
 */
export const NODE_RUNTIME: { minMajor: number; node: string; npm: string } = nodeRuntime;
export const MIN_NODE_MAJOR = nodeRuntime.minMajor;

/**
 * The S3-compatible server the tests run the archive store against (versitygw, Apache-2.0), built
 * from the Go module proxy into ~/.cache/tollgate/versitygw-v<version>; pinned here and nowhere else.
 */
export const VERSITYGW_VERSION = '1.8.0';
