import type { RouteFamily } from '../route-table';
import { callRoutes } from './calls';
import { complianceRoutes } from './compliance';
import { executionRoutes } from './executions';
import { governanceEventRoutes } from './governance-events';
import { integrityRoutes } from './integrity';
import { jobRoutes } from './jobs';
import { permitRoutes } from './permits';
import { policiesRoutes } from './policies';
import { projectPolicyRoutes } from './policy';
import { projectRoutes } from './projects';
import { authRoutes } from './auth';
import { managementProviderRoutes } from './management-providers';
import { managementReportRoutes } from './management-reports';
import { billingRoutes } from './billing';
import { proxyRoutes } from './proxy';
import { sessionRoutes } from './sessions';
import { voiceRoutes } from './voice';
import { mcpRoutes } from './mcp';
import { statusRoutes } from './status';
import { timelineRoutes } from './timeline';
import { webhookRoutes } from './webhooks';
import { workflowRoutes } from './workflows';

/**
 * The route table: every converted family (src/api/route-table.ts), in mount order. The app
 * mounts them (src/api/app.ts) and the OpenAPI document lists them (src/api/openapi.ts).
 */
export const ROUTE_TABLE: RouteFamily[] = [
  statusRoutes,
  authRoutes,
  projectRoutes,
  managementProviderRoutes,
  managementReportRoutes,
  billingRoutes,
  projectPolicyRoutes,
  workflowRoutes,
  executionRoutes,
  callRoutes,
  timelineRoutes,
  permitRoutes,
  proxyRoutes,
  policiesRoutes,
  jobRoutes,
  webhookRoutes,
  governanceEventRoutes,
  integrityRoutes,
  complianceRoutes,
  sessionRoutes,
  voiceRoutes,
  mcpRoutes,
];
