-- Reopening a failed job (an operation's `reopenFailed: true`): the same job,
-- under the same key, runs again. A run is one series of attempts ending in
-- one terminal write; the first run is 1, each reopen adds one. The unique
-- scope still holds one job per key (invariant 1): a reopen moves the failed
-- row back to accepted, it never inserts one.
ALTER TABLE jobs ADD COLUMN run integer NOT NULL DEFAULT 1 CHECK (run >= 1);

-- Each attempt belongs to the run that opened it: the attempt cap counts the
-- attempts of the current run, and a run's bill is its own attempts.
ALTER TABLE attempts ADD COLUMN run integer NOT NULL DEFAULT 1 CHECK (run >= 1);

-- Whoever opens an attempt, it takes its job's run (read under the job row's
-- lock, which every opening holds), so no insert has to name it.
CREATE FUNCTION attempts_take_job_run() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  SELECT run INTO NEW.run FROM jobs WHERE id = NEW.job_id;
  RETURN NEW;
END;
$$;

CREATE TRIGGER attempts_run
  BEFORE INSERT ON attempts
  FOR EACH ROW
  EXECUTE FUNCTION attempts_take_job_run();

-- One bill per run: a run's terminal write writes its settlement (the same
-- deferred trigger as before), keyed by (job, run). A job never reopened has
-- one run and so one bill, as before.
ALTER TABLE settlement_adjustments DROP CONSTRAINT settlement_adjustments_job_id_fkey;
ALTER TABLE settlements ADD COLUMN run integer NOT NULL DEFAULT 1 CHECK (run >= 1);
ALTER TABLE settlements DROP CONSTRAINT settlements_pkey;
ALTER TABLE settlements ADD PRIMARY KEY (job_id, run);
ALTER TABLE settlement_adjustments ADD COLUMN run integer NOT NULL DEFAULT 1;
ALTER TABLE settlement_adjustments ADD FOREIGN KEY (job_id, run) REFERENCES settlements (job_id, run);

-- As in 0009, for the run that just ended: its own attempts only.
CREATE OR REPLACE FUNCTION settle_terminal_job() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  settlement_currency text;
BEGIN
  SELECT a.cost_currency INTO settlement_currency FROM attempts a
   WHERE a.job_id = NEW.id AND a.run = NEW.run AND a.usage_reported AND a.cost_currency IS NOT NULL
   ORDER BY (a.id = NEW.completed_by) DESC NULLS LAST, a.seq LIMIT 1;
  INSERT INTO settlements (job_id, run, principal_id, operation, job_status, billing, currency, provider_cost, billable,
                           input_tokens, output_tokens, attempts, attempts_unpriced, attempt_costs)
  SELECT NEW.id, NEW.run, NEW.principal_id, NEW.operation, NEW.status, NEW.billing, settlement_currency,
         COALESCE(sum(attempt_cost_in(a, settlement_currency)), 0),
         CASE WHEN NEW.billing = 'all_attempts' THEN COALESCE(sum(attempt_cost_in(a, settlement_currency)), 0)
              WHEN NEW.status = 'succeeded' THEN COALESCE(sum(attempt_cost_in(a, settlement_currency)) FILTER (WHERE a.id = NEW.completed_by), 0)
              ELSE 0 END,
         COALESCE(sum(a.input_tokens) FILTER (WHERE a.usage_reported), 0),
         COALESCE(sum(a.output_tokens) FILTER (WHERE a.usage_reported), 0),
         count(a.id),
         count(a.id) FILTER (WHERE attempt_cost_in(a, settlement_currency) IS NULL),
         COALESCE(jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
           'attemptId', a.id, 'seq', a.seq, 'provider', a.provider, 'model', a.model, 'status', a.status,
           'reported', a.usage_reported, 'cost', a.cost::text, 'currency', a.cost_currency,
           'winner', a.id IS NOT DISTINCT FROM NEW.completed_by)) ORDER BY a.seq) FILTER (WHERE a.id IS NOT NULL), '[]'::jsonb)
    FROM (SELECT 1) one LEFT JOIN attempts a ON a.job_id = NEW.id AND a.run = NEW.run
  ON CONFLICT (job_id, run) DO NOTHING;
  RETURN NULL;
END;
$$;

-- Usage learned late adjusts the bill of the run its attempt belonged to.
CREATE OR REPLACE FUNCTION adjust_settlement_for_late_usage() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO settlement_adjustments (job_id, run, attempt_id, reason, currency, provider_cost, billable, input_tokens, output_tokens)
  SELECT s.job_id, s.run, NEW.id, 'late_usage', NEW.cost_currency, COALESCE(NEW.cost, 0),
         CASE WHEN s.billing = 'all_attempts' THEN COALESCE(NEW.cost, 0) ELSE 0 END,
         NEW.input_tokens, NEW.output_tokens
    FROM settlements s WHERE s.job_id = NEW.job_id AND s.run = NEW.run
  ON CONFLICT (attempt_id) DO NOTHING;
  RETURN NULL;
END;
$$;

-- One run's bill and its adjustments, as the API shows it.
CREATE FUNCTION run_settlement(s settlements) RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT jsonb_strip_nulls(jsonb_build_object(
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
             FROM settlement_adjustments d WHERE d.job_id = s.job_id AND d.run = s.run), '[]'::jsonb)))
$$;

-- The bill of the job's current run (NULL while that run is open).
CREATE OR REPLACE FUNCTION job_settlement(job uuid) RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT run_settlement(s) FROM settlements s JOIN jobs j ON j.id = s.job_id AND j.run = s.run WHERE s.job_id = job
$$;

-- Every run's bill, oldest first: what a reopened job shows as `settlements`.
CREATE FUNCTION job_settlements(job uuid) RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT COALESCE(jsonb_agg(run_settlement(s) ORDER BY s.run), '[]'::jsonb) FROM settlements s WHERE s.job_id = job
$$;

-- Each attempt in the details document names its run. The document's
-- definition is kept as it is (renamed) and wrapped, so this holds whatever
-- it shows.
ALTER FUNCTION job_details(uuid) RENAME TO job_details_of_attempts;
CREATE FUNCTION job_details(job uuid) RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT jsonb_set(d, '{attempts}', COALESCE((
           SELECT jsonb_agg(item.attempt || jsonb_build_object('run', a.run) ORDER BY item.n)
             FROM jsonb_array_elements(d -> 'attempts') WITH ORDINALITY AS item (attempt, n)
             JOIN attempts a ON a.id = (item.attempt ->> 'id')::uuid), '[]'::jsonb))
    FROM job_details_of_attempts(job) d
$$;
