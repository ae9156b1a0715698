/**
 * @tollgate/sdk: a typed client for the Tollgate API. Paths, bodies and responses are the types
 * generated from the OpenAPI document (src/schema.d.ts); requests go through openapi-fetch.
 */
import createClient, { type Client, type ClientOptions } from 'openapi-fetch';
import type { components, operations, paths } from './schema';

export type { components, operations, paths };
export type TollgateClient = Client<paths>;

export interface TollgateClientOptions extends Omit<ClientOptions, 'baseUrl'> {
  /** Where Tollgate listens, for example http://127.0.0.1:8080 */
  baseUrl: string;
  /** A project API key (tg_client_… or tg_admin_…), sent as a bearer token. */
  apiKey: string;
}

export function createTollgateClient({ baseUrl, apiKey, headers, ...rest }: TollgateClientOptions): TollgateClient {
  return createClient<paths>({
    ...rest,
    baseUrl: baseUrl.replace(/\/+$/, ''),
    headers: { ...(headers as Record<string, string> | undefined), authorization: `Bearer ${apiKey}` },
  });
}
