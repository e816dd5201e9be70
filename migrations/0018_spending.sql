-- One account of spending (invariant 15). What a principal spent and owes is
-- its settlements (one bill per run) plus the adjustments learned after them
-- (a late answer's usage, billable under all_attempts): reports, budgets and
-- the console read this view, and nothing else.
--
-- An adjustment counts on the day it was learned, in its own currency. It
-- carries its principal and operation, as a settlement does, so that a
-- principal's spending since a time is one index range per table.
ALTER TABLE settlement_adjustments ADD COLUMN principal_id text, ADD COLUMN operation text;
UPDATE settlement_adjustments d SET principal_id = s.principal_id, operation = s.operation
  FROM settlements s WHERE s.job_id = d.job_id AND s.run = d.run;
ALTER TABLE settlement_adjustments ALTER COLUMN principal_id SET NOT NULL, ALTER COLUMN operation SET NOT NULL;
CREATE INDEX settlement_adjustments_principal_created_at_idx ON settlement_adjustments (principal_id, created_at);
CREATE INDEX settlement_adjustments_created_at_idx ON settlement_adjustments (created_at);

CREATE OR REPLACE FUNCTION adjust_settlement_for_late_usage() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO settlement_adjustments (job_id, run, principal_id, operation, attempt_id, reason, currency, provider_cost, billable, input_tokens, output_tokens)
  SELECT s.job_id, s.run, s.principal_id, s.operation, NEW.id, 'late_usage', NEW.cost_currency, COALESCE(NEW.cost, 0),
         CASE WHEN s.billing = 'all_attempts' THEN COALESCE(NEW.cost, 0) ELSE 0 END,
         NEW.input_tokens, NEW.output_tokens
    FROM settlements s WHERE s.job_id = NEW.job_id AND s.run = NEW.run
  ON CONFLICT (attempt_id) DO NOTHING;
  RETURN NULL;
END;
$$;

-- `bills` is 1 for a settlement (a run's bill) and 0 for an adjustment, so
-- that counting jobs counts each run's bill once.
CREATE VIEW spending AS
  SELECT s.principal_id, s.operation, s.job_id, s.run, s.settled_at AS at, s.currency,
         s.provider_cost, s.billable, s.input_tokens, s.output_tokens, 1 AS bills
    FROM settlements s
  UNION ALL
  SELECT d.principal_id, d.operation, d.job_id, d.run, d.created_at AS at, d.currency,
         d.provider_cost, d.billable, d.input_tokens, d.output_tokens, 0 AS bills
    FROM settlement_adjustments d;
