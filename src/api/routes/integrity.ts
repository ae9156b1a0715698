import { z } from 'zod';
import { ApiError, errors, parseOrThrow } from '../errors';
import { SecretBoxUnavailableError } from '../../crypto/secret-box';
import { authOf } from '../middleware/auth';
import { checkpointPublicKeySchema, checkpointSchema, consistencyProofSchema, inclusionProofSchema, verificationKeyListSchema } from '../schemas/integrity';
import { routeFamily } from '../route-table';
import { findGovernanceEvent } from '../../db/repositories/governance-events';
import { chainLinkOf, checkpointAtSize, latestCheckpoint, listComplianceKeys, type CheckpointRow } from '../../db/repositories/integrity-log';
import { readRecordLeafSourceById, recordLeafCanonical, recordLeafSourceKey } from '../../db/repositories/record-leaf-text';
import { canonicalOfEventSeq } from '../../db/repositories/canonical-columns';
import { derivedEventRef } from '../../executions/lifecycle-events';
import { integritySigner } from '../../intents/signing';
import { complianceSigner, COMPLIANCE_KEY_PURPOSE } from '../../integrity/keys';
import { logOrigin, proveConsistency, proveInclusion, rootAt, storedTreeSize } from '../../integrity/log';
import { verifierKey } from '../../integrity/note';
import { logAnchor } from '../../db/repositories/archives';
import { notFoundOrArchived } from '../../retention/archived';

const b64 = (b: Buffer) => b.toString('base64');

function checkpointView(c: CheckpointRow) {
  return {
    object: 'checkpoint' as const,
    origin: c.origin,
    tree_size: Number(c.tree_size),
    root_hash: b64(c.root_hash),
    key_id: c.kid,
    issued_at: new Date(c.issued_at).toISOString(),
    note: c.note,
  };
}

const size = z.coerce.number().int().min(1).max(Number.MAX_SAFE_INTEGER);
export const inclusionSchema = z
  .object({ event_id: z.string().min(1).max(200).optional(), position: size.optional(), tree_size: size.optional() })
  .strict()
  .refine((q) => (q.event_id === undefined) !== (q.position === undefined), { message: 'pass exactly one of event_id and position' });
export const consistencySchema = z.object({ first: size, second: size.optional() }).strict();

/**
 * Public verification keys and the project's signed log: checkpoints, inclusion and consistency
 * proofs (docs/decisions/signed-checkpoints.md).
 */
export const integrityRoutes = routeFamily(
  'Integrity',
  (deps) => {
    // The first request on a fresh database creates the key; production without TOLLGATE_MASTER_KEY cannot seal it.
    const signer = () =>
      complianceSigner(deps.db, deps.config).catch((err: unknown) => {
        if (err instanceof SecretBoxUnavailableError) throw new ApiError(503, 'integrity_unavailable', err.message);
        throw err;
      });

    async function treeSizeOr(projectId: string, wanted: number | undefined): Promise<{ size: number; checkpoint: CheckpointRow | null }> {
      if (wanted === undefined) {
        const c = await latestCheckpoint(deps.db, projectId);
        if (!c) throw errors.notFound('Checkpoint');
        return { size: Number(c.tree_size), checkpoint: c };
      }
      const stored = await storedTreeSize(deps.db, projectId);
      if (wanted > stored) {
        throw errors.validation([{ path: 'tree_size', message: `The log's tree has ${stored} leaves so far; pass a size up to that`, code: 'tree_size_out_of_range' }]);
      }
      return { size: wanted, checkpoint: await checkpointAtSize(deps.db, projectId, wanted) };
    }
    return { signer, treeSizeOr };
  },
  [
    {
      method: 'get',
      path: '/v1/integrity/checkpoint-public-key',
      stability: 'Beta',
      auth: 'public',
      summary: 'Key of signed checkpoints',
      response: checkpointPublicKeySchema,
      handler: async (ctx, { signer }) => {
        const s = await signer();
        ctx.set('cache-control', 'public, max-age=300');
        ctx.body = {
          object: 'checkpoint_public_key',
          key_id: s.kid,
          algorithm: 'Ed25519',
          key_name: s.keyName,
          note_verifier_key: s.vkey,
          public_key_b64: s.publicKey32.toString('base64'),
          format: 'C2SP signed-note (https://c2sp.org/signed-note); checkpoints: C2SP tlog-checkpoint',
          origin_format: logOrigin('<project_id>'),
          valid_from: s.validFrom.toISOString(),
        };
      },
    },
    // Every public key Tollgate signs with, current and retired, with its validity (no authentication).
    {
      method: 'get',
      path: '/v1/compliance/keys',
      stability: 'Beta',
      auth: 'public',
      summary: 'Keys that sign export bundles',
      response: verificationKeyListSchema,
      handler: async (ctx, { deps, signer }) => {
        await signer(); // creates the first key on a fresh database
        const [keys, binding] = await Promise.all([listComplianceKeys(deps.db), integritySigner(deps.db, deps.config)]);
        ctx.set('cache-control', 'public, max-age=300');
        ctx.body = {
          object: 'list',
          data: [
            ...keys.map((k) => ({
              key_id: k.kid,
              algorithm: k.algorithm,
              purpose: k.purpose === COMPLIANCE_KEY_PURPOSE ? 'checkpoints_and_export_manifests' : k.purpose,
              signs: ['checkpoint', 'export_manifest'],
              format: 'C2SP signed-note',
              key_name: k.key_name,
              note_verifier_key: verifierKey(k.key_name, k.public_key),
              public_key_b64: k.public_key.toString('base64'),
              valid_from: new Date(k.valid_from).toISOString(),
              valid_until: k.valid_until ? new Date(k.valid_until).toISOString() : null,
              status: k.valid_until ? 'retired' : 'active',
            })),
            {
              key_id: binding.kid,
              algorithm: 'Ed25519',
              purpose: 'permit_binding',
              signs: ['workflow_declaration', 'workflow_amendment'],
              format: 'Ed25519 over RFC 8785 (JCS) JSON',
              key_name: null,
              note_verifier_key: null,
              public_key_b64: binding.publicKeyB64,
              valid_from: binding.createdAt,
              valid_until: null,
              status: 'active',
            },
          ],
        };
      },
    },
    {
      method: 'get',
      path: '/v1/integrity/checkpoints/latest',
      stability: 'Beta',
      auth: 'key',
      summary: 'Latest signed checkpoint',
      response: checkpointSchema,
      handler: async (ctx, { deps }) => {
        const c = await latestCheckpoint(deps.db, authOf(ctx).projectId);
        if (!c) throw errors.notFound('Checkpoint');
        ctx.body = checkpointView(c);
      },
    },
    {
      method: 'get',
      path: '/v1/integrity/checkpoints/:tree_size',
      stability: 'Beta',
      auth: 'key',
      summary: 'Signed checkpoint at a tree size',
      response: checkpointSchema,
      handler: async (ctx, { deps }) => {
        const n = size.safeParse(ctx.params.tree_size);
        const c = n.success ? await checkpointAtSize(deps.db, authOf(ctx).projectId, n.data) : null;
        if (!c) throw errors.notFound('Checkpoint', ctx.params.tree_size);
        ctx.body = checkpointView(c);
      },
    },
    {
      method: 'get',
      path: '/v1/integrity/proofs/inclusion',
      stability: 'Beta',
      auth: 'key',
      summary: 'Inclusion proof',
      response: inclusionProofSchema,
      query: inclusionSchema,
      handler: async (ctx, { deps, treeSizeOr }) => {
        const { projectId } = authOf(ctx);
        const q = parseOrThrow(inclusionSchema, ctx.query, 'query');
        let position = q.position;
        let leaf: string | null = null;
        let eventId: string | null = null;
        const derived = q.event_id === undefined ? null : derivedEventRef(q.event_id);
        if (derived) {
          // A lifecycle event derived from a call record is logged as its record: the proof is the record's leaf.
          const record = await readRecordLeafSourceById(deps.db, projectId, derived.executionId);
          if (!record) throw await notFoundOrArchived(deps.db, projectId, { what: 'Governance event', id: q.event_id!, timeId: derived.executionId });
          const link = await chainLinkOf(deps.db, projectId, recordLeafSourceKey(record).seq);
          if (!link) throw errors.conflict('event_not_yet_logged', 'The event is not chained yet; retry in a moment');
          position = Number(link.chain_pos);
          leaf = recordLeafCanonical(record, link.prev_hash);
          eventId = q.event_id!;
        } else if (q.event_id !== undefined) {
          const e = await findGovernanceEvent(deps.db, projectId, q.event_id);
          if (!e) throw errors.notFound('Governance event', q.event_id);
          if (e.chain_pos === null || e.chain_pos === undefined) throw errors.conflict('event_not_yet_logged', 'The event is not chained yet; retry in a moment');
          position = Number(e.chain_pos);
          leaf = await canonicalOfEventSeq(deps.db, e.seq, e.prev_hash!);
          eventId = e.id;
        }
        const anchor = await logAnchor(deps.db, projectId);
        if (anchor && position! <= anchor.position) throw archivedPositions(anchor.archiveId, position!);
        const { size: treeSize, checkpoint } = await treeSizeOr(projectId, q.tree_size);
        if (position! > treeSize) throw errors.conflict('event_not_yet_checkpointed', `Position ${position} is not covered by a tree of ${treeSize} leaves yet; retry after the next checkpoint`, { position, tree_size: treeSize });
        const p = await proveInclusion(deps.db, projectId, position! - 1, treeSize);
        ctx.body = {
          object: 'inclusion_proof',
          event_id: eventId,
          position,
          leaf_index: position! - 1,
          tree_size: treeSize,
          leaf_hash: b64(p.leafHash),
          leaf,
          proof: p.proof.map(b64),
          root_hash: b64(p.root),
          checkpoint: checkpoint ? checkpointView(checkpoint) : null,
        };
      },
    },
    {
      method: 'get',
      path: '/v1/integrity/proofs/consistency',
      stability: 'Beta',
      auth: 'key',
      summary: 'Consistency proof',
      response: consistencyProofSchema,
      query: consistencySchema,
      handler: async (ctx, { deps, treeSizeOr }) => {
        const { projectId } = authOf(ctx);
        const q = parseOrThrow(consistencySchema, ctx.query, 'query');
        const { size: second, checkpoint } = await treeSizeOr(projectId, q.second);
        if (q.first > second) throw errors.validation([{ path: 'first', message: 'first must not exceed second', code: 'too_big' }]);
        const [proof, firstRoot, firstCheckpoint] = await Promise.all([
          proveConsistency(deps.db, projectId, q.first, second),
          rootAt(deps.db, projectId, q.first),
          checkpointAtSize(deps.db, projectId, q.first),
        ]).catch(async (err: unknown) => {
          // A tree size inside an archived prefix may need leaves retention deleted: its proofs are the archive's.
          const anchor = await logAnchor(deps.db, projectId);
          if (anchor && q.first < anchor.position && err instanceof Error && /is not stored/.test(err.message)) throw archivedPositions(anchor.archiveId, q.first);
          throw err;
        });
        ctx.body = {
          object: 'consistency_proof',
          first: q.first,
          second,
          first_root_hash: b64(firstRoot),
          second_root_hash: checkpoint ? b64(checkpoint.root_hash) : b64(await rootAt(deps.db, projectId, second)),
          proof: proof.map(b64),
          first_checkpoint: firstCheckpoint ? checkpointView(firstCheckpoint) : null,
          second_checkpoint: checkpoint ? checkpointView(checkpoint) : null,
        };
      },
    },
  ],
);

/** A position or tree size inside the log's archived prefix: its leaves were deleted by retention, its proofs are in the archive. */
function archivedPositions(archiveId: string, position: number): ApiError {
  return new ApiError(404, 'archived', `Position ${position} of the log is older than the project's retention: its proof is in archive ${archiveId}`, { details: { position, archive_id: archiveId } });
}
