import type { AmendmentRecord } from '../db/repositories/intents';
import type { AmendmentView } from '../../workflows/intent-messages';
import { amendmentChange } from './canonical';

/** An amendment record as the workflow and the API return it (spec: "Amendment record"). */
export function amendmentView(a: AmendmentRecord): AmendmentView {
  return {
    id: a.id,
    ...amendmentChange(a),
    amendment_signature_b64: a.amendment_signature_b64,
    created_at: a.created_at.toISOString(),
  };
}
