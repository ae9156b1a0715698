// Every workflow the worker serves. One file per workflow; this file only re-exports.
export { idempotencyCleanupWorkflow, partitionMaintenanceWorkflow, reservationExpiryWorkflow, retentionWorkflow } from './maintenance';
export { intentWorkflow } from './intent';
export { jobWorkflow } from './job';
export { webhookDeliveryWorkflow } from './webhook-delivery';
export { reconciliationWorkflow } from './reconciliation';
export { checkpointWorkflow } from './checkpoint';
export { complianceExportWorkflow } from './compliance-export';
export { sessionWorkflow } from './session';
