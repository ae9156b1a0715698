/**
 * Intents (routes in src/api/routes/workflows.ts): declare.ts (declaration, projection,
 * signing, workflow start), lifecycle.ts (amend, complete), read.ts (the stored record with live
 * state). The intentWorkflow (workflows/intent.ts) owns the counters while an intent is active.
 */
export type { IntentServiceDeps } from './deps';
export * from './declare';
export * from './lifecycle';
export * from './read';
