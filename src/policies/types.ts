/** The kinds of addressable policy of /v1/policies: one per rule list or setting of the policy document. */
export const POLICY_TYPES = ['deny_rule', 'review_rule', 'rate_limit', 'model_allow_list', 'budget', 'firewall'] as const;
export type PolicyType = (typeof POLICY_TYPES)[number];
