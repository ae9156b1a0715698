/**
 * The /v1 route list the fuzz tests and the isolation matrix are generated from: the OpenAPI
 * route table (src/api/openapi.ts). The one import of it, so a restructured table is adapted here.
 */
import { z } from 'zod';
import { documentedRoutes } from '../../src/api/openapi';
import type { JsonSchema } from './json-schema-arbitrary';

export interface FuzzRoute {
  method: 'get' | 'post' | 'patch' | 'delete' | 'put';
  /** Koa style, `:param` segments. */
  path: string;
  auth: 'key' | 'admin' | 'public';
  body?: JsonSchema;
  query?: JsonSchema;
  contentType?: string;
}

const toJsonSchema = (s: z.ZodType | undefined): JsonSchema | undefined =>
  s ? (z.toJSONSchema(s, { io: 'input', unrepresentable: 'any' }) as JsonSchema) : undefined;

export function v1Routes(): FuzzRoute[] {
  return documentedRoutes().filter((r) => r.path.startsWith('/v1/')).map((r) => ({
    method: r.method,
    path: r.path,
    auth: r.auth === 'admin' || r.auth === 'key' || r.auth === 'public' ? r.auth : 'key',
    body: toJsonSchema(r.body),
    query: toJsonSchema(r.query),
    contentType: r.contentType,
  }));
}

export const pathParams = (koaPath: string): string[] => [...koaPath.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1]);
