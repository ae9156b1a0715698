import type { AmendmentRecord } from '../db/repositories/intents';
import type { AmendmentView } from '../../workflows/intent-messages';

/** An amendment record as the workflow and the API return it (spec: "Amendment record"). */
export function amendmentView(a: AmendmentRecord): AmendmentView {
  return {
    id: a.id,
    applied_against_version: a.applied_against_version,
    previous_expected_calls: a.previous_expected_calls,
    new_expected_calls: a.new_expected_calls,
    previous_max_calls: a.previous_max_calls,
    new_max_calls: a.new_max_calls,
    reason_provided: a.reason_provided,
    amendment_signature_b64: a.amendment_signature_b64,
    created_at: a.created_at.toISOString(),
  };
}
