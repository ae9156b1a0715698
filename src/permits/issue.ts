/**
 * Issuing permits: POST /v1/permits (idempotent on the key, revalidated when the earlier allow
 * expired or was released) and POST /v1/permits/dry-run. Governance decides and reserves.
 */
import canonicalize from 'canonicalize';
import { newId } from '../ids';
import { errors } from '../errors';
import { findPermitHeadByIdempotencyKey } from '../db/repositories/permits';
import { LOCK_PERMIT_IDEMPOTENCY, withKeyLock } from '../db/repositories/key-locks';
import type { GovernanceRequest } from '../governance';
import { DEFAULT_AUDIO_SECONDS_ESTIMATE, DEFAULT_OUTPUT_TOKENS_ESTIMATE, pricing } from '../pricing';
import { makeUsage } from '../providers/shared/usage';
import type { ProviderId } from '../providers/types';
import type { AuthContext } from '../auth-context';
import type { PermitRequest } from './schemas';
import { decisionExcerpt, PermitView } from './view';
import { sha256, type PermitContext } from './context';
import { checkIntent, governJoined, joinIntent, type IntentJoin } from '../executions/reservation-denial';
import { PERMIT_LEASE_KEY } from '../../workflows/intent-messages';

/** The intent lease a permit's call was taken from (a lease whose process died is settled from permits). */
function leaseMeta(intent: IntentJoin): Record<string, string> {
  return intent.lease ? { [PERMIT_LEASE_KEY]: intent.lease } : {};
}

/** The surface name permit-first decisions are evaluated and stored under (policy match.route). */
export const PERMITS_SURFACE = 'permits';

export interface CreateResult {
  body: PermitView;
  replayed: boolean;
  revalidatedFrom: string | null;
}

export function permitIssuing(ctx: PermitContext) {
  const { db, governance, intentReservations, ownProject, view, expireIfStale, getPermit } = ctx;

  /**
   * A permit joined to an intent is checked as executions are: it takes a call from the
   * intent's ceiling, or is denied with the intent's reason code (workflow_intent.not_found,
   * .not_active, .max_calls_exceeded). A dry run checks without taking a call.
   */
  async function intentOf(projectId: string, b: PermitRequest, take: boolean): Promise<IntentJoin> {
    if (!b.workflow_id) return {};
    return take ? joinIntent(intentReservations, projectId, b.workflow_id) : checkIntent(db, projectId, b.workflow_id);
  }

  /** Fills provider/model like the executions route: both = explicit; one = default for the other. */
  function resolveTarget(b: PermitRequest): { provider: ProviderId; model: string } {
    if (b.provider && b.model) {
      const r = pricing.resolveModel(b.model, b.provider);
      return { provider: b.provider, model: r && r !== 'ambiguous' ? r.model : b.model };
    }
    if (b.model) {
      const r = pricing.resolveModel(b.model);
      if (r === null || r === 'ambiguous') {
        throw errors.validation([{ path: 'provider', message: `model "${b.model}" is ${r === null ? 'unknown' : 'offered by several providers'}; give provider`, code: 'custom' }]);
      }
      return { provider: r.provider, model: r.model };
    }
    const t = pricing.defaultTarget(b.operation, b.provider);
    if (!t) throw errors.validation([{ path: 'provider', message: `no default model for ${b.operation}${b.provider ? ` on ${b.provider}` : ''}; give model`, code: 'custom' }]);
    return t;
  }

  /**
   * The request's estimate: the caller's, or — when it gives none of the three estimate fields —
   * a default: no input tokens, DEFAULT_OUTPUT_TOKENS_ESTIMATE output tokens for operations that
   * produce text, one image for generate.image, DEFAULT_AUDIO_SECONDS_ESTIMATE for OpenAI
   * transcription. `decisionMetadata` says so in the decision (docs/decisions/permits-without-estimate.md).
   */
  function estimateOf(b: PermitRequest, provider: ProviderId, model: string) {
    const given = b.estimated_cost_usd_micros !== undefined || b.estimated_input_tokens !== undefined || b.estimated_output_tokens !== undefined;
    if (given) {
      const input = b.estimated_input_tokens ?? 0;
      const output = b.estimated_output_tokens ?? 0;
      const cost = b.estimated_cost_usd_micros ?? pricing.costMicros(provider, model, makeUsage({ input_tokens: input, output_tokens: output }, true));
      return { input, output, cost, decisionMetadata: undefined };
    }
    const op = b.operation;
    const producesText = op === 'generate.text' || op === 'understand.image' || (op === 'transcribe.audio' && provider === 'google');
    const output = producesText ? DEFAULT_OUTPUT_TOKENS_ESTIMATE : 0;
    const images = op === 'generate.image' ? 1 : undefined;
    const audioSeconds = op === 'transcribe.audio' && provider === 'openai' ? DEFAULT_AUDIO_SECONDS_ESTIMATE : undefined;
    const cost = pricing.costMicros(provider, model, makeUsage({ input_tokens: 0, output_tokens: output, images, audio_seconds: audioSeconds }, true));
    const basis: Record<string, number> = { input_tokens: 0, output_tokens: output };
    if (images !== undefined) basis.images = images;
    if (audioSeconds !== undefined) basis.audio_seconds = audioSeconds;
    return { input: 0, output, cost, decisionMetadata: { estimate_source: 'default', estimate_basis: basis } };
  }

  function governanceRequest(projectId: string, requestId: string, b: PermitRequest, intent: IntentJoin): GovernanceRequest & { decisionMetadata?: Record<string, unknown> } {
    const { provider, model } = resolveTarget(b);
    const e = estimateOf(b, provider, model);
    return {
      projectId,
      requestId,
      route: PERMITS_SURFACE,
      operation: b.operation,
      provider,
      model,
      estimatedInputTokens: e.input,
      estimatedOutputTokens: e.output,
      estimatedCostMicros: e.cost,
      workflowId: b.workflow_id ?? null,
      ...(intent.refusal ? { intentRefusal: intent.refusal } : {}),
      metadata: { ...(b.metadata ?? {}), ...(b.route ? { route: b.route } : {}) },
      // The names the caller says it will offer: a rule's match.tool sees them, the permit keeps them.
      ...(b.tools?.length ? { tools: b.tools } : {}),
      // No inspectableText: permit-first mode never runs the prompt firewall (it never sees the definitions).
      ...(e.decisionMetadata ? { decisionMetadata: e.decisionMetadata } : {}),
    };
  }

  /** Hash of the semantic payload: every field but the idempotency key, defaults applied (no tools = `tools: []`). */
  function payloadHash(b: PermitRequest): string {
    const { idempotency_key: _k, tools, ...rest } = b;
    return sha256(canonicalize({ ...rest, metadata: rest.metadata ?? {}, ...(tools?.length ? { tools } : {}) }) as string);
  }
  async function create(auth: AuthContext, b: PermitRequest): Promise<CreateResult> {
    ownProject(auth, b.project_id);
    const key = b.idempotency_key ?? newId('idem');
    const hash = payloadHash(b);
    const requestedRoute = b.route ?? null;
    return withKeyLock(db, LOCK_PERMIT_IDEMPOTENCY, `${auth.projectId}:${key}`, async () => {
      let head = await findPermitHeadByIdempotencyKey(db, auth.projectId, key);
      if (!head) {
        const intent = await intentOf(auth.projectId, b, true);
        const req = governanceRequest(auth.projectId, newId('req'), b, intent);
        const d = await governJoined(intentReservations, { projectId: auth.projectId, workflowId: b.workflow_id, intent }, () =>
          governance.evaluate(req, {
            persist: true,
            ttlSeconds: b.ttl_seconds,
            decisionMetadata: req.decisionMetadata,
            idempotencyKey: key,
            permitMetadata: { idempotency_key: key, request_hash: hash, requested_route: requestedRoute, key_id: auth.keyId, ...leaseMeta(intent) },
          }),
        );
        const p = await getPermit(auth.projectId, d.permit_id);
        return { body: await view(p), replayed: false, revalidatedFrom: null };
      }
      if (head.metadata?.request_hash !== hash) throw errors.idempotencyConflict(key);
      head = await expireIfStale(head);
      const stale = head.decision === 'allow' && !head.revoked_at && (head.reservation_state === 'expired' || head.reservation_state === 'released');
      if (!stale) return { body: await view(head), replayed: true, revalidatedFrom: null };
      // Revalidate: a fresh evaluation under today's policy and counters, linked to the stale permit.
      const intent = await intentOf(auth.projectId, b, true);
      const req = governanceRequest(auth.projectId, head.request_id ?? newId('req'), b, intent);
      const d = await governJoined(intentReservations, { projectId: auth.projectId, workflowId: b.workflow_id, intent }, () =>
        governance.evaluate(req, {
          persist: true,
          ttlSeconds: b.ttl_seconds,
          decisionMetadata: req.decisionMetadata,
          parentPermitId: head.id,
          idempotencyKey: null, // the unique column stays on the key's first permit
          permitMetadata: {
            idempotency_key: key,
            request_hash: hash,
            requested_route: requestedRoute,
            key_id: auth.keyId,
            lineage_reason: 'revalidation',
            revalidated_from: head.id,
            ...leaseMeta(intent),
          },
        }),
      );
      const p = await getPermit(auth.projectId, d.permit_id);
      return { body: await view(p), replayed: false, revalidatedFrom: head.id };
    });
  }

  async function dryRun(auth: AuthContext, b: PermitRequest) {
    ownProject(auth, b.project_id);
    const req = governanceRequest(auth.projectId, newId('req'), b, await intentOf(auth.projectId, b, false));
    const d = await governance.evaluate(req, { persist: false, ttlSeconds: b.ttl_seconds, decisionMetadata: req.decisionMetadata });
    return {
      object: 'permit_dry_run',
      dry_run: true,
      // Nothing was stored: there is no permit to refer to later.
      permit_id: null,
      ...decisionExcerpt(d),
      project_id: auth.projectId,
      operation: req.operation,
      provider: req.provider,
      model: req.model,
      workflow_id: req.workflowId ?? null,
      route: b.route ?? null,
      tools: req.tools ?? [],
      estimate: { input_tokens: req.estimatedInputTokens, output_tokens: req.estimatedOutputTokens, cost_usd_micros: req.estimatedCostMicros },
    };
  }

  return { create, dryRun };
}
