/** The Temporal CLI release Tollgate builds and runs; pinned here and nowhere else. */
export const TEMPORAL_CLI_VERSION = '1.5.1';
