import { z } from 'zod';

/** Timelines (spec, "GET /v1/requests/{request_id}/timeline") and governance events, as the API shows them. */

export const timelineEventSchema = z
  .looseObject({
    timestamp: z.string(),
    event_type: z.string().meta({ example: 'permit.allowed' }),
    source: z.string(),
    phase: z.string(),
    provider: z.string().nullable(),
    model: z.string().nullable(),
    permit_id: z.string().nullable(),
    request_id: z.string().nullable(),
    job_id: z.string().nullable(),
    session_id: z.string().nullable(),
    metadata: z.record(z.string(), z.unknown()),
  })
  .meta({ id: 'TimelineEvent' });

const ids = z.array(z.string());

export const requestTimelineSchema = z
  .looseObject({
    project_id: z.string(),
    request_id: z.string(),
    permit_ids: ids,
    job_ids: ids,
    session_ids: ids,
    events: z.array(timelineEventSchema),
  })
  .meta({ id: 'RequestTimeline' });

export const permitTimelineSchema = z
  .looseObject({
    project_id: z.string(),
    permit_id: z.string(),
    request_id: z.string().nullable(),
    permit: z.looseObject({ permit_id: z.string(), decision: z.string(), reason_code: z.string(), route: z.string() }),
    endpoint: z.string(),
    issued_at: z.string(),
    expires_at: z.string().nullable(),
    related_permit_ids: ids,
    revocation: z.looseObject({ revoked_at: z.string(), revoked_by: z.string().nullable(), reason: z.string().nullable() }).nullable(),
    permit_ids: ids,
    job_ids: ids,
    session_ids: ids,
    events: z.array(timelineEventSchema),
  })
  .meta({ id: 'PermitTimeline' });

export const governanceEventSchema = timelineEventSchema
  .extend({
    id: z.string(),
    object: z.literal('governance_event'),
    /** Chain position (1, 2, 3, … per project); null until the sequencer chains the event. */
    position: z.number().int().nullable(),
    chain: z.looseObject({ seq: z.number().int(), prev_hash: z.string(), hash: z.string() }).nullable(),
  })
  .meta({ id: 'GovernanceEvent' });

export const governanceEventListSchema = z
  .looseObject({ object: z.literal('list'), data: z.array(governanceEventSchema), next_cursor: z.string().nullable() })
  .meta({ id: 'GovernanceEventList' });
