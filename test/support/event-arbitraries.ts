/** fast-check arbitraries for an event's own fields (the columns a caller writes), from a text arbitrary. */
import fc from 'fast-check';

export function eventFieldArbitraries(text: fc.Arbitrary<string>, metadataValue: fc.Arbitrary<unknown> = fc.jsonValue()) {
  const optional = fc.option(text, { nil: null });
  return {
    event_type: text,
    source: text,
    phase: text,
    provider: optional,
    model: optional,
    permit_id: optional,
    request_id: optional,
    job_id: optional,
    session_id: optional,
    metadata: fc.dictionary(text, metadataValue) as fc.Arbitrary<Record<string, unknown>>,
  };
}
