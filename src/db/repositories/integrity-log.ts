/**
 * The compliance log (issue 15): signing keys, the stored Merkle nodes of each project's event log,
 * signed checkpoints, and the chain-ordered reads they are built from. Leaf i of a project's tree
 * is the event or call record at event_chain.chain_pos = i + 1. Reads go through event_chain's
 * (project_id, chain_pos) index; nothing here writes to `events` or `event_chain`.
 */
import type { Queryable } from '../pool';
import { CANONICAL_COLUMNS_SQL } from './canonical-columns';
import type { CanonicalColumns } from '../../events/canonical';

export const CHECKPOINT_LOCK_CLASS = 7_302;

export interface ComplianceKeyRow {
  kid: string;
  purpose: string;
  algorithm: 'Ed25519';
  key_name: string;
  public_key: Buffer;
  private_key_sealed: string;
  valid_from: Date;
  valid_until: Date | null;
}

export async function findActiveComplianceKey(db: Queryable, purpose: string): Promise<ComplianceKeyRow | null> {
  const { rows } = await db.query<ComplianceKeyRow>('SELECT * FROM compliance_signing_keys WHERE purpose = $1 AND valid_until IS NULL', [purpose]);
  return rows[0] ?? null;
}

export async function findComplianceKey(db: Queryable, kid: string): Promise<ComplianceKeyRow | null> {
  const { rows } = await db.query<ComplianceKeyRow>('SELECT * FROM compliance_signing_keys WHERE kid = $1', [kid]);
  return rows[0] ?? null;
}

/** Inserts the first key of `purpose` unless an active one exists (concurrent first starts keep one). */
export async function insertComplianceKeyIfNoneActive(
  db: Queryable,
  k: { kid: string; purpose: string; keyName: string; publicKey: Buffer; privateKeySealed: string },
): Promise<void> {
  await db.query(
    `INSERT INTO compliance_signing_keys (kid, purpose, algorithm, key_name, public_key, private_key_sealed)
     VALUES ($1, $2, 'Ed25519', $3, $4, $5) ON CONFLICT DO NOTHING`,
    [k.kid, k.purpose, k.keyName, k.publicKey, k.privateKeySealed],
  );
}

/** Rotation: closes the active key of `purpose` and inserts the next one, in one transaction (caller's). */
export async function rotateComplianceKey(
  db: Queryable,
  k: { kid: string; purpose: string; keyName: string; publicKey: Buffer; privateKeySealed: string },
): Promise<void> {
  await db.query('UPDATE compliance_signing_keys SET valid_until = now() WHERE purpose = $1 AND valid_until IS NULL', [k.purpose]);
  await db.query(
    `INSERT INTO compliance_signing_keys (kid, purpose, algorithm, key_name, public_key, private_key_sealed)
     VALUES ($1, $2, 'Ed25519', $3, $4, $5)`,
    [k.kid, k.purpose, k.keyName, k.publicKey, k.privateKeySealed],
  );
}

export async function listComplianceKeys(db: Queryable): Promise<Omit<ComplianceKeyRow, 'private_key_sealed'>[]> {
  const { rows } = await db.query<Omit<ComplianceKeyRow, 'private_key_sealed'>>(
    'SELECT kid, purpose, algorithm, key_name, public_key, valid_from, valid_until FROM compliance_signing_keys ORDER BY valid_from, kid',
  );
  return rows;
}

// ---- the chain, read in chain order ----

export async function chainHead(db: Queryable, projectId: string): Promise<number> {
  const { rows } = await db.query<{ head: number | null }>('SELECT max(chain_pos) AS head FROM event_chain WHERE project_id = $1', [projectId]);
  return Number(rows[0]?.head ?? 0);
}

/** Heads of several projects' chains (one index probe each). */
export async function chainHeads(db: Queryable, projectIds: string[]): Promise<Map<string, number>> {
  const { rows } = await db.query<{ project_id: string; head: number | null }>(
    `SELECT p AS project_id, (SELECT max(chain_pos) FROM event_chain c WHERE c.project_id = p) AS head
       FROM unnest($1::text[]) AS p`,
    [projectIds],
  );
  return new Map(rows.map((r) => [r.project_id, Number(r.head ?? 0)]));
}

/**
 * A chain position with its event's canonical columns, all null (seq too) when no event row holds
 * its seq: a call record's position (read with `readRecordLeaves`) or a deleted event's.
 */
export type ChainedColumnsRow = { [K in keyof CanonicalColumns]: CanonicalColumns[K] | null } & {
  chain_seq: string;
  chain_pos: string;
  prev_hash: string;
  hash: string;
  /** Null on rows chained before migration 0115. */
  leaf_hash: Buffer | null;
};

/** Chain positions (afterPos, toPos], at most `limit` of them. */
export interface ChainRange {
  afterPos: number;
  toPos: number;
  limit?: number;
}

/**
 * Chain positions (from, to] with the columns the canonical form is written from
 * (`canonicalFromColumns`) and the stored leaf hash: an export's read of the events it writes out,
 * and the checkpoint's when its packed read finds something off (a gap, a broken link, rows
 * chained before migration 0115). Whole rows written out through
 * `canonicalize` cost more per event (docs/decisions/checkpoints-sign-what-was-chained.md).
 */
export async function readChainRangeColumns(db: Queryable, projectId: string, range: ChainRange): Promise<ChainedColumnsRow[]> {
  const { afterPos, toPos, limit = 1000 } = range;
  const { rows } = await db.query<ChainedColumnsRow>(
    `SELECT e.seq, ${CANONICAL_COLUMNS_SQL}, c.seq AS chain_seq, c.chain_pos, c.prev_hash, c.hash, c.leaf_hash
       FROM event_chain c LEFT JOIN events e ON e.seq = c.seq
      WHERE c.project_id = $1 AND c.chain_pos > $2 AND c.chain_pos <= $3
      ORDER BY c.chain_pos LIMIT $4`,
    [projectId, afterPos, toPos, limit],
  );
  return rows;
}

/** Chain positions (from, to] in one row: what the checkpoint needs when every row has its leaf hash and every link holds. */
export interface PackedChainLeaves {
  n: number;
  first_pos: string | null;
  last_pos: string | null;
  /** prev_hash of the first row (the caller checks it against the hash before). */
  first_prev: string | null;
  last_hash: string | null;
  /** First position (after the first row) whose prev_hash is not the hash before it. */
  broken_link: string | null;
  /** Some row has no stored leaf hash (chained before migration 0115). */
  unstored: boolean | null;
  /** The rows' leaf hashes, 32 bytes each, in chain order. */
  leaves: Buffer | null;
}

/**
 * Chain positions (from, to] as one row, links checked in SQL. A read of rows costs the process a
 * row object, two hex strings and a Buffer per event, which live across the checkpoint's awaits
 * and lengthen its scavenges (docs/decisions/checkpoints-sign-what-was-chained.md).
 */
export async function readChainLeavesPacked(db: Queryable, projectId: string, range: Required<ChainRange>): Promise<PackedChainLeaves> {
  const { afterPos, toPos, limit } = range;
  const { rows } = await db.query<PackedChainLeaves>(
    `SELECT count(*)::int AS n, min(chain_pos) AS first_pos, max(chain_pos) AS last_pos,
            (array_agg(prev_hash ORDER BY chain_pos))[1] AS first_prev,
            (array_agg(hash ORDER BY chain_pos DESC))[1] AS last_hash,
            min(chain_pos) FILTER (WHERE before IS NOT NULL AND prev_hash <> before) AS broken_link,
            bool_or(leaf_hash IS NULL) AS unstored,
            string_agg(leaf_hash, ''::bytea ORDER BY chain_pos) AS leaves
       FROM (SELECT chain_pos, prev_hash, hash, leaf_hash, lag(hash) OVER (ORDER BY chain_pos) AS before
               FROM (SELECT chain_pos, prev_hash, hash, leaf_hash FROM event_chain
                      WHERE project_id = $1 AND chain_pos > $2 AND chain_pos <= $3
                      ORDER BY chain_pos LIMIT $4) r) w`,
    [projectId, afterPos, toPos, limit],
  );
  return rows[0];
}

/** The chain position and link of a chained seq (an event's or a call record's); null before it is chained. */
export async function chainLinkOf(db: Queryable, projectId: string, seq: string | number): Promise<{ chain_pos: string; prev_hash: string } | null> {
  const { rows } = await db.query<{ chain_pos: string; prev_hash: string }>('SELECT chain_pos, prev_hash FROM event_chain WHERE seq = $1 AND project_id = $2', [seq, projectId]);
  return rows[0] ?? null;
}

export async function chainRowAt(db: Queryable, projectId: string, pos: number): Promise<{ hash: string } | null> {
  const { rows } = await db.query<{ hash: string }>('SELECT hash FROM event_chain WHERE project_id = $1 AND chain_pos = $2', [projectId, pos]);
  return rows[0] ?? null;
}

// ---- Merkle nodes ----

/**
 * Leaves in the stored tree: the latest checkpoint's size. The tree is extended only in the
 * transaction that signs a checkpoint of its new size (src/integrity/log.ts, `issueCheckpoint`),
 * so no stored node lies beyond it.
 */
export async function storedTreeSize(db: Queryable, projectId: string): Promise<number> {
  const { rows } = await db.query<{ n: string | null }>('SELECT max(tree_size) AS n FROM log_checkpoints WHERE project_id = $1', [projectId]);
  return Number(rows[0]?.n ?? 0);
}

/**
 * Stored perfect subtrees by (level, idx). The leaves (level 0) come from the chain's stored leaf
 * hashes (`event_chain.leaf_hash`, position idx + 1), and from `merkle_nodes` for rows chained
 * before migration 0115, whose leaf the checkpoint wrote out and stored there.
 */
export async function getNodes(db: Queryable, projectId: string, ids: { level: number; idx: number }[]): Promise<{ level: number; idx: number; hash: Buffer }[]> {
  if (ids.length === 0) return [];
  // The ids as runs of consecutive indexes per level, each read as one range of the primary key (the
  // leaves' as one range of chain positions): a batch's leaves and proof nodes are a few runs, and
  // matched one by one the planner read every node or chain row of the project to find them.
  // Leaves written out into merkle_nodes (rows chained before leaf hashes were stored) are read there too.
  // Each run is its own index range scan (LATERAL … OFFSET 0): joined to the runs, the planner
  // cannot see how narrow they are and, on a project of millions of leaves, took a parallel scan
  // of every chain row and node of the project for each batch.
  const nodes = runs(ids);
  const leaves = runs(ids.filter((i) => i.level === 0));
  const { rows } = await db.query<{ level: number; idx: string; hash: Buffer }>(
    `SELECT n.level, n.idx, n.hash FROM unnest($2::smallint[], $3::bigint[], $4::bigint[]) AS w(level, lo, hi)
       CROSS JOIN LATERAL (SELECT n.level, n.idx, n.hash FROM merkle_nodes n
                            WHERE n.project_id = $1 AND n.level = w.level AND n.idx BETWEEN w.lo AND w.hi OFFSET 0) n
     UNION ALL
     SELECT 0::smallint, c.chain_pos - 1, c.leaf_hash FROM unnest($5::bigint[], $6::bigint[]) AS r(lo, hi)
       CROSS JOIN LATERAL (SELECT c.chain_pos, c.leaf_hash FROM event_chain c
                            WHERE c.project_id = $1 AND c.chain_pos BETWEEN r.lo + 1 AND r.hi + 1 AND c.leaf_hash IS NOT NULL OFFSET 0) c`,
    [projectId, nodes.level, nodes.lo, nodes.hi, leaves.lo, leaves.hi],
  );
  return rows.map((r) => ({ level: Number(r.level), idx: Number(r.idx), hash: r.hash }));
}

/** Node ids as runs of consecutive indexes of one level: parallel arrays of level, first and last index. */
function runs(ids: { level: number; idx: number }[]): { level: number[]; lo: number[]; hi: number[] } {
  const sorted = [...ids].sort((a, b) => a.level - b.level || a.idx - b.idx);
  const out = { level: [] as number[], lo: [] as number[], hi: [] as number[] };
  for (const id of sorted) {
    const last = out.level.length - 1;
    if (last >= 0 && out.level[last] === id.level && id.idx <= out.hi[last] + 1) out.hi[last] = Math.max(out.hi[last], id.idx);
    else {
      out.level.push(id.level);
      out.lo.push(id.idx);
      out.hi.push(id.idx);
    }
  }
  return out;
}

/**
 * Stores nodes (32-byte hashes). The hashes travel as one bytea parameter, which node-postgres
 * sends in binary, sliced per row in SQL: as a bytea[] each hash was written out as escaped hex
 * text, two thirds of a checkpoint's CPU per event (docs/decisions/checkpoints-sign-what-was-chained.md).
 */
export async function insertNodes(db: Queryable, projectId: string, nodes: { level: number; idx: number; hash: Buffer }[]): Promise<void> {
  for (let i = 0; i < nodes.length; i += 5000) {
    const part = nodes.slice(i, i + 5000);
    if (part.some((n) => n.hash.length !== 32)) throw new Error('a Merkle node hash is not 32 bytes');
    await db.query(
      `INSERT INTO merkle_nodes (project_id, level, idx, hash)
       SELECT $1, w.level, w.idx, substring($4::bytea FROM (w.ord::int - 1) * 32 + 1 FOR 32)
         FROM unnest($2::smallint[], $3::bigint[]) WITH ORDINALITY AS w(level, idx, ord)`,
      [projectId, `{${part.map((n) => n.level).join(',')}}`, `{${part.map((n) => n.idx).join(',')}}`, Buffer.concat(part.map((n) => n.hash))],
    );
  }
}

// ---- checkpoints ----

export interface CheckpointRow {
  project_id: string;
  tree_size: number;
  root_hash: Buffer;
  origin: string;
  kid: string;
  note: string;
  issued_at: Date;
}

export async function latestCheckpoint(db: Queryable, projectId: string): Promise<CheckpointRow | null> {
  const { rows } = await db.query<CheckpointRow>('SELECT * FROM log_checkpoints WHERE project_id = $1 ORDER BY tree_size DESC LIMIT 1', [projectId]);
  return rows[0] ?? null;
}

export async function checkpointAtSize(db: Queryable, projectId: string, size: number): Promise<CheckpointRow | null> {
  const { rows } = await db.query<CheckpointRow>('SELECT * FROM log_checkpoints WHERE project_id = $1 AND tree_size = $2', [projectId, size]);
  return rows[0] ?? null;
}

/** The smallest checkpoint covering `size` leaves. */
export async function checkpointCovering(db: Queryable, projectId: string, size: number): Promise<CheckpointRow | null> {
  const { rows } = await db.query<CheckpointRow>(
    'SELECT * FROM log_checkpoints WHERE project_id = $1 AND tree_size >= $2 ORDER BY tree_size LIMIT 1',
    [projectId, size],
  );
  return rows[0] ?? null;
}

export async function listCheckpoints(db: Queryable, projectId: string, opts: { beforeSize?: number; limit: number }): Promise<CheckpointRow[]> {
  const { rows } = await db.query<CheckpointRow>(
    `SELECT * FROM log_checkpoints WHERE project_id = $1 AND ($2::bigint IS NULL OR tree_size < $2)
      ORDER BY tree_size DESC LIMIT $3`,
    [projectId, opts.beforeSize ?? null, opts.limit],
  );
  return rows;
}

export async function insertCheckpoint(db: Queryable, c: Omit<CheckpointRow, 'issued_at'>): Promise<CheckpointRow> {
  const { rows } = await db.query<CheckpointRow>(
    `INSERT INTO log_checkpoints (project_id, tree_size, root_hash, origin, kid, note) VALUES ($1, $2, $3, $4, $5, $6) RETURNING *`,
    [c.project_id, c.tree_size, c.root_hash, c.origin, c.kid, c.note],
  );
  return rows[0];
}

/** Projects whose chain grew past their latest checkpoint (one index probe per project per table). */
export async function projectsNeedingCheckpoint(db: Queryable, limit = 1000): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT p.id FROM projects p
      WHERE coalesce((SELECT max(chain_pos) FROM event_chain c WHERE c.project_id = p.id), 0)
          > coalesce((SELECT max(tree_size) FROM log_checkpoints k WHERE k.project_id = p.id), 0)
      LIMIT $1`,
    [limit],
  );
  return rows.map((r) => r.id);
}

/** Takes the project's checkpoint lock for the caller's transaction; false when another issuer holds it. */
export async function tryCheckpointLock(db: Queryable, projectId: string): Promise<boolean> {
  const { rows } = await db.query<{ ok: boolean }>('SELECT pg_try_advisory_xact_lock($1, hashtext($2)) AS ok', [CHECKPOINT_LOCK_CLASS, projectId]);
  return rows[0].ok;
}
