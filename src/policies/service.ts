/**
 * Addressable policies (GET/POST /v1/policies, PATCH/DELETE /v1/policies/{id}).
 *
 * A policy is one named rule of the project's policy document, where evaluation reads it:
 *   deny_rule → document.deny_rules[id], review_rule → review_rules[id], rate_limit → rate_limits[id]
 *   (many per project, id chosen by the caller or `pol_…`); model_allow_list → allowed_models,
 *   budget → budgets, firewall → firewall (one each; the id is the type).
 * Writes go through the governance policy repository (updatePolicy: new document version,
 * `policy.updated` on the project's hash chain); deletes add `policy.deleted`. Name, description
 * and template provenance live in project_policy_rules. Rules written straight into the document
 * (PATCH /v1/projects/{id}/policy) are listed too, with managed_by = policy_document.
 */
import { z } from 'zod';
import type { Clock } from '../clock';
import { Db } from '../db/pool';
import { newId } from '../ids';
import { errors, zodIssues } from '../errors';
import type { AuthContext } from '../auth-context';
import { appendEvent } from '../db/repositories/events';
import { getPolicy, PolicyValidationError, StoredPolicy, updatePolicy } from '../db/repositories/policies';
import { deletePolicyRuleMeta, listPolicyRuleMeta, PolicyRuleMeta, upsertPolicyRuleMeta } from '../db/repositories/policy-rules';
import { LOCK_POLICY_RULES, withKeyLock } from '../db/repositories/key-locks';
import { defaultPolicyDocument, mergePatch, PolicyDocument, policyDocumentSchema } from '../governance/policy';
import { denyRuleSchema, rateLimitSchema, reviewRuleSchema } from '../governance/policy';
import { findTemplate } from './templates';
import { POLICY_TYPES, type PolicyType } from './types';


const RULE_SECTION = { deny_rule: 'deny_rules', review_rule: 'review_rules', rate_limit: 'rate_limits' } as const;
type RuleType = keyof typeof RULE_SECTION;
const isRuleType = (t: PolicyType): t is RuleType => t in RULE_SECTION;

const CONFIG_SCHEMAS: Record<PolicyType, z.ZodType> = {
  deny_rule: denyRuleSchema.omit({ id: true }),
  review_rule: reviewRuleSchema.omit({ id: true }),
  rate_limit: rateLimitSchema.omit({ id: true }),
  model_allow_list: z.object({ models: z.array(z.string().min(1).max(300)).min(1).max(500) }).strict(),
  budget: policyDocumentSchema.shape.budgets,
  firewall: policyDocumentSchema.shape.firewall,
};

const ruleId = z.string().min(1).max(100).regex(/^[A-Za-z0-9_.:-]+$/, 'use letters, digits, _ . : -');

export const createPolicySchema = z
  .object({
    type: z.enum(POLICY_TYPES).optional(),
    id: ruleId.optional(),
    name: z.string().min(1).max(200).optional(),
    description: z.string().min(1).max(2000).optional(),
    template_id: z.string().min(1).max(100).optional(),
    config: z.record(z.string(), z.unknown()).optional(),
  })
  .strict();

export const updatePolicySchema = z
  .object({
    name: z.string().min(1).max(200).nullable().optional(),
    description: z.string().min(1).max(2000).nullable().optional(),
    /** RFC 7396 merge patch over the current config. */
    config: z.record(z.string(), z.unknown()).optional(),
  })
  .strict();

interface DocPolicy {
  id: string;
  type: PolicyType;
  config: Record<string, unknown>;
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** Every policy the document holds, in document order. */
function policiesOf(doc: PolicyDocument, meta: PolicyRuleMeta[]): DocPolicy[] {
  const out: DocPolicy[] = [];
  const defaults = defaultPolicyDocument();
  const hasMeta = (id: string) => meta.some((m) => m.policy_id === id);
  for (const t of ['deny_rule', 'review_rule', 'rate_limit'] as const) {
    for (const r of doc[RULE_SECTION[t]]) {
      const { id, ...config } = r as { id: string } & Record<string, unknown>;
      out.push({ id, type: t, config });
    }
  }
  if (doc.allowed_models !== null) out.push({ id: 'model_allow_list', type: 'model_allow_list', config: { models: doc.allowed_models } });
  if (hasMeta('budget') || !same(doc.budgets, defaults.budgets)) out.push({ id: 'budget', type: 'budget', config: doc.budgets });
  if (hasMeta('firewall') || !same(doc.firewall, defaults.firewall)) out.push({ id: 'firewall', type: 'firewall', config: doc.firewall });
  return out;
}

/** The merge patch that writes `config` (or removes the policy when null) into the document. */
function documentPatch(doc: PolicyDocument, type: PolicyType, id: string, config: Record<string, unknown> | null): Record<string, unknown> {
  if (isRuleType(type)) {
    const section = RULE_SECTION[type];
    const list = (doc[section] as Array<{ id: string }>).filter((r) => r.id !== id);
    if (config !== null) {
      const i = (doc[section] as Array<{ id: string }>).findIndex((r) => r.id === id);
      const entry = { id, ...config };
      if (i >= 0) list.splice(i, 0, entry as never);
      else list.push(entry);
    }
    return { [section]: list };
  }
  if (type === 'model_allow_list') return { allowed_models: config === null ? null : config.models };
  // Parsed configs carry every key, so the merge patch replaces the section (null keys → defaults).
  if (type === 'budget') return { budgets: config };
  return { firewall: config };
}

export function createPolicyService(deps: { db: Db; clock: Clock }) {
  const { db, clock } = deps;

  function view(p: DocPolicy, stored: StoredPolicy, meta: PolicyRuleMeta | undefined) {
    return {
      object: 'policy',
      id: p.id,
      project_id: stored.project_id,
      type: p.type,
      name: meta?.name ?? null,
      description: meta?.description ?? null,
      template_id: meta?.template_id ?? null,
      config: p.config,
      managed_by: meta ? 'policies' : 'policy_document',
      document_version: stored.version,
      created_at: meta ? new Date(meta.created_at).toISOString() : null,
      updated_at: meta ? new Date(meta.updated_at).toISOString() : stored.updated_at ? new Date(stored.updated_at).toISOString() : null,
    };
  }

  async function load(projectId: string) {
    const [stored, meta] = await Promise.all([getPolicy(db, projectId), listPolicyRuleMeta(db, projectId)]);
    return { stored, meta, policies: policiesOf(stored.document, meta) };
  }

  async function list(projectId: string) {
    const { stored, meta, policies } = await load(projectId);
    return { object: 'list', document_version: stored.version, data: policies.map((p) => view(p, stored, meta.find((m) => m.policy_id === p.id))) };
  }

  async function get(projectId: string, id: string) {
    const { stored, meta, policies } = await load(projectId);
    const p = policies.find((x) => x.id === id);
    if (!p) throw errors.notFound('Policy', id);
    return view(p, stored, meta.find((m) => m.policy_id === id));
  }

  function parseConfig(type: PolicyType, config: unknown): Record<string, unknown> {
    const r = CONFIG_SCHEMAS[type].safeParse(config ?? {});
    if (!r.success) throw errors.validation(zodIssues(r.error, 'config'));
    return r.data as Record<string, unknown>;
  }

  async function write(projectId: string, patch: Record<string, unknown>, updatedBy: string): Promise<StoredPolicy> {
    try {
      return await updatePolicy(db, { projectId, patch, mode: 'merge', updatedBy, now: clock.now() });
    } catch (err) {
      if (err instanceof PolicyValidationError) throw errors.validation(zodIssues(err.zodError));
      throw err;
    }
  }

  async function create(auth: AuthContext, body: z.infer<typeof createPolicySchema>) {
    let type = body.type;
    let config: unknown = body.config;
    if (body.template_id) {
      const t = findTemplate(body.template_id);
      if (!t) throw errors.validation([{ path: 'template_id', message: `unknown template "${body.template_id}"`, code: 'custom' }]);
      if (type && type !== t.type) throw errors.validation([{ path: 'type', message: `template ${t.id} makes a ${t.type} policy`, code: 'custom' }]);
      type = t.type;
      config = mergePatch(t.config, body.config ?? {});
    }
    if (!type) throw errors.validation([{ path: 'type', message: 'give type (or template_id)', code: 'custom' }]);
    const policyType = type;
    const parsed = parseConfig(policyType, config);
    if (!isRuleType(policyType) && body.id !== undefined && body.id !== policyType) {
      throw errors.validation([{ path: 'id', message: `a ${policyType} policy is unique per project; its id is "${policyType}"`, code: 'custom' }]);
    }
    if (isRuleType(policyType) && body.id !== undefined && (POLICY_TYPES as readonly string[]).includes(body.id)) {
      throw errors.validation([{ path: 'id', message: `"${body.id}" is reserved for the ${body.id} policy`, code: 'custom' }]);
    }
    const id = isRuleType(policyType) ? (body.id ?? newId('pol')) : policyType;
    return withKeyLock(db, LOCK_POLICY_RULES, auth.projectId, async () => {
      const { stored, policies } = await load(auth.projectId);
      if (policies.some((p) => p.id === id)) throw errors.conflict('policy_exists', `A policy with id "${id}" already exists; PATCH /v1/policies/${id} changes it`, { id });
      const by = auth.actor;
      const next = await write(auth.projectId, documentPatch(stored.document, policyType, id, parsed), by);
      const now = clock.now();
      const meta: PolicyRuleMeta = {
        project_id: auth.projectId, policy_id: id, type: policyType, name: body.name ?? null, description: body.description ?? null,
        template_id: body.template_id ?? null, created_at: now, created_by: by, updated_at: now, updated_by: by, document_version: next.version,
      };
      await upsertPolicyRuleMeta(db, meta);
      const p = policiesOf(next.document, [meta]).find((x) => x.id === id)!;
      return view(p, next, meta);
    });
  }

  async function update(auth: AuthContext, id: string, body: z.infer<typeof updatePolicySchema>) {
    return withKeyLock(db, LOCK_POLICY_RULES, auth.projectId, async () => {
      const { stored, meta, policies } = await load(auth.projectId);
      const current = policies.find((p) => p.id === id);
      if (!current) throw errors.notFound('Policy', id);
      const config = body.config === undefined ? current.config : parseConfig(current.type, mergePatch(current.config, body.config));
      const by = auth.actor;
      // Every change, even of the name only, is a new document version with its policy.updated event.
      const next = await write(auth.projectId, documentPatch(stored.document, current.type, id, config), by);
      const old = meta.find((m) => m.policy_id === id);
      const now = clock.now();
      const m: PolicyRuleMeta = {
        project_id: auth.projectId, policy_id: id, type: current.type,
        name: body.name === undefined ? (old?.name ?? null) : body.name,
        description: body.description === undefined ? (old?.description ?? null) : body.description,
        template_id: old?.template_id ?? null, created_at: old?.created_at ?? now, created_by: old?.created_by ?? by,
        updated_at: now, updated_by: by, document_version: next.version,
      };
      await upsertPolicyRuleMeta(db, m);
      const p = policiesOf(next.document, [m]).find((x) => x.id === id)!;
      return view(p, next, m);
    });
  }

  async function remove(auth: AuthContext, id: string) {
    return withKeyLock(db, LOCK_POLICY_RULES, auth.projectId, async () => {
      const { stored, policies } = await load(auth.projectId);
      const current = policies.find((p) => p.id === id);
      if (!current) throw errors.notFound('Policy', id);
      const by = auth.actor;
      const next = await write(auth.projectId, documentPatch(stored.document, current.type, id, null), by);
      await deletePolicyRuleMeta(db, auth.projectId, id);
      await appendEvent(db, {
        projectId: auth.projectId,
        eventType: 'policy.deleted',
        source: 'policies',
        phase: 'policy',
        timestamp: clock.now(),
        metadata: { policy_id: id, policy_type: current.type, version: next.version, deleted_by: by },
      });
      return { object: 'policy', id, type: current.type, deleted: true, document_version: next.version };
    });
  }

  return { list, get, create, update, remove };
}
