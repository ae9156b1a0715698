/** The compliance export bundle's manifest and the offline verifier's report (src/compliance/verify-export.ts). */

export const MANIFEST_FORMAT = 'tollgate.compliance-export/v1';

export interface ExportManifest {
  format: string;
  export_id: string;
  project_id: string;
  created_at: string;
  window: { since: string; until: string };
  include: string[];
  log: { origin: string; first_index: number | null; last_index: number | null; event_count: number; checkpoint_size: number | null };
  files: { name: string; sha256: string; bytes: number; records: number }[];
  key_id: string;
}

export interface VerifyFailure {
  check: 'key' | 'manifest_signature' | 'manifest' | 'checkpoint_signature' | 'checkpoint' | 'file_missing' | 'file_unexpected' | 'file_hash' | 'proof' | 'event_missing' | 'event_altered' | 'event_unexpected' | 'chain';
  message: string;
  file?: string;
  line?: number;
  index?: number;
  position?: number;
  event_id?: string;
}

export interface VerifyResult {
  object: 'export_verification';
  ok: boolean;
  export_id: string | null;
  project_id: string | null;
  checkpoint: { origin: string; tree_size: number; root_hash: string } | null;
  events_verified: number;
  files_verified: number;
  failures: VerifyFailure[];
}
