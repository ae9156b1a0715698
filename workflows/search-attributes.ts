import { defineSearchAttributeKey } from '@temporalio/common';

/**
 * Custom search attributes Tollgate sets on its workflows so operators can find them in the
 * Temporal UI. They must be registered on the namespace: the dev server gets them from
 * `--search-attribute` (scripts/lib/temporal-dev-server.ts); other clusters with
 * `temporal operator search-attribute create`.
 */
export const SA = {
  projectId: defineSearchAttributeKey('TollgateProjectId', 'KEYWORD'),
  status: defineSearchAttributeKey('TollgateStatus', 'KEYWORD'),
  operation: defineSearchAttributeKey('TollgateOperation', 'KEYWORD'),
  provider: defineSearchAttributeKey('TollgateProvider', 'KEYWORD'),
  model: defineSearchAttributeKey('TollgateModel', 'KEYWORD'),
  // The old name stays: it is registered on the namespace and set on running workflows.
  intentId: defineSearchAttributeKey('TollgateWorkflowIntentId', 'KEYWORD'),
} as const;

export const SEARCH_ATTRIBUTE_REGISTRATIONS: ReadonlyArray<{ name: string; type: 'Keyword' }> = Object.values(SA).map(
  (k) => ({ name: k.name, type: 'Keyword' as const }),
);
