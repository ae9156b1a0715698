-- Up Migration

-- Provider proxy calls (POST /v1/proxy/{provider}/...) are recorded in the executions table too,
-- with route 'proxy' (the provider column says which proxy), so usage, cost, metrics and
-- readback work the same way for every governed call.
ALTER TABLE executions DROP CONSTRAINT IF EXISTS executions_route_check;
ALTER TABLE executions ADD CONSTRAINT executions_route_check CHECK (route IN ('executions', 'execute', 'proxy'));

-- Down Migration
ALTER TABLE executions DROP CONSTRAINT IF EXISTS executions_route_check;
ALTER TABLE executions ADD CONSTRAINT executions_route_check CHECK (route IN ('executions', 'execute'));
