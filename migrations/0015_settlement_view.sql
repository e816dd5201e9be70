-- A run's settlement as the API shows it, as a view instead of a function.
-- A SQL function with a FROM clause is planned again at every call (some
-- 300 microseconds of server time, more than the rest of a replay's read);
-- a view is planned once with the statement that reads it, so a prepared
-- replay pays only for executing it. The document is run_settlement's
-- (migration 0014), written out so that it can be inlined; it replaces it.
CREATE VIEW settlement_documents AS
  SELECT s.job_id,
         s.run,
         jsonb_strip_nulls(jsonb_build_object(
           'run', s.run,
           'jobStatus', s.job_status,
           'billing', s.billing,
           'currency', s.currency,
           'providerCost', s.provider_cost::text,
           'billable', s.billable::text,
           'inputTokens', s.input_tokens,
           'outputTokens', s.output_tokens,
           'attemptsUnpriced', s.attempts_unpriced,
           'attempts', s.attempt_costs,
           'settledAt', to_char(s.settled_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
           'adjustments', COALESCE((
             SELECT jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
                      'attemptId', d.attempt_id,
                      'reason', d.reason,
                      'currency', d.currency,
                      'providerCost', d.provider_cost::text,
                      'billable', d.billable::text,
                      'inputTokens', d.input_tokens,
                      'outputTokens', d.output_tokens,
                      'at', to_char(d.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))) ORDER BY d.id)
             FROM settlement_adjustments d WHERE d.job_id = s.job_id AND d.run = s.run), '[]'::jsonb))) AS document
    FROM settlements s;

-- The view reads the current run's bill; nothing reads this function any more.
DROP FUNCTION job_settlement(uuid);

-- Every run's bill, oldest first, from the same view: the document is
-- written once, here, and 0014's run_settlement is no longer needed.
CREATE OR REPLACE FUNCTION job_settlements(job uuid) RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT COALESCE(jsonb_agg(d.document ORDER BY d.run), '[]'::jsonb) FROM settlement_documents d WHERE d.job_id = job
$$;
DROP FUNCTION run_settlement(settlements);

-- A run's adjustments are read with its settlement on every read of a
-- terminal job: by index, not by scanning every adjustment ever written.
CREATE INDEX settlement_adjustments_job_run_idx ON settlement_adjustments (job_id, run, id);
