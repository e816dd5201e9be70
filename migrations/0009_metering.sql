-- Metering: what each attempt consumed, and one bill per terminal job
-- (invariant 13). Money is numeric (exact decimals), never floating point.

-- Usage as the provider reported it. usage_reported says whether the numbers
-- are known: an attempt that sent nothing reports zeros (true); an unknown
-- attempt, or a provider that gave no usage, says false until reconciliation
-- or a lookup brings the numbers. A report is written once, never rewritten.
ALTER TABLE attempts
  ADD COLUMN usage_reported      boolean NOT NULL DEFAULT false,
  ADD COLUMN input_tokens        bigint  CHECK (input_tokens >= 0),
  ADD COLUMN output_tokens       bigint  CHECK (output_tokens >= 0),
  -- the part of input_tokens the provider served from its prompt cache, where it says
  ADD COLUMN cached_tokens       bigint  CHECK (cached_tokens >= 0),
  -- the model the provider says answered (may be a dated variant of `model`)
  ADD COLUMN model_used          text,
  ADD COLUMN provider_request_id text,
  ADD COLUMN latency_ms          integer CHECK (latency_ms >= 0),
  -- from the price table at the time of the report; NULL when the model had no price
  ADD COLUMN cost                numeric CHECK (cost >= 0),
  ADD COLUMN cost_currency       text,
  ADD CONSTRAINT attempts_usage_when_reported CHECK (NOT usage_reported OR (input_tokens IS NOT NULL AND output_tokens IS NOT NULL)),
  ADD CONSTRAINT attempts_cost_has_currency CHECK ((cost IS NULL OR cost = 0) OR cost_currency IS NOT NULL);

-- The billing policy an intent was admitted under: the bill follows the rule
-- in force when the click happened, not when the job ended.
ALTER TABLE jobs ADD COLUMN billing text NOT NULL DEFAULT 'winner' CHECK (billing IN ('winner', 'all_attempts'));

-- One bill per job. No foreign key to jobs: a bill outlives the job's
-- retention. One currency per settlement (a providers file prices in one
-- currency); an attempt priced in another currency, or whose usage was not
-- known at settlement, is counted in attempts_unpriced and never added in.
CREATE TABLE settlements (
  job_id            uuid        PRIMARY KEY,
  principal_id      text        NOT NULL,
  operation         text        NOT NULL,
  job_status        text        NOT NULL CHECK (job_status IN ('succeeded', 'failed', 'cancelled')),
  billing           text        NOT NULL,
  currency          text,
  -- what Onceflow paid: every attempt, winners, failures, unknowns and discarded answers alike
  provider_cost     numeric     NOT NULL CHECK (provider_cost >= 0),
  -- what the principal owes under the billing policy
  billable          numeric     NOT NULL CHECK (billable >= 0),
  input_tokens      bigint      NOT NULL,
  output_tokens     bigint      NOT NULL,
  attempts          integer     NOT NULL,
  attempts_unpriced integer     NOT NULL,
  -- each attempt's cost as it stood when the job was settled
  attempt_costs     jsonb       NOT NULL,
  settled_at        timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX settlements_principal_settled_at_idx ON settlements (principal_id, settled_at);

-- A fact learned after settlement (a late answer's usage): a row of its own
-- that names the job, never a rewrite of the settlement.
CREATE TABLE settlement_adjustments (
  id            bigserial   PRIMARY KEY,
  job_id        uuid        NOT NULL REFERENCES settlements (job_id),
  attempt_id    uuid        NOT NULL UNIQUE,
  reason        text        NOT NULL,
  currency      text,
  provider_cost numeric     NOT NULL CHECK (provider_cost >= 0),
  billable      numeric     NOT NULL CHECK (billable >= 0),
  input_tokens  bigint      NOT NULL,
  output_tokens bigint      NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now()
);

-- An attempt's cost in the settlement's currency, or NULL when it cannot be
-- added in (not known, or priced in another currency). A zero is a zero in
-- any currency.
CREATE FUNCTION attempt_cost_in(a attempts, currency text) RETURNS numeric LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN NOT a.usage_reported OR a.cost IS NULL THEN NULL
              WHEN a.cost = 0 THEN 0
              WHEN a.cost_currency = currency THEN a.cost END
$$;

-- Writes the settlement of a job that just became terminal. Deferred to the
-- end of the terminal transaction, so it sees every write made with the
-- terminal one (an attempt cancelled with its job, a winner's usage); the
-- primary key decides that a job is settled once (invariant 13).
CREATE FUNCTION settle_terminal_job() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  settlement_currency text;
BEGIN
  -- The winner's currency, else the first priced attempt's.
  SELECT a.cost_currency INTO settlement_currency FROM attempts a
   WHERE a.job_id = NEW.id AND a.usage_reported AND a.cost_currency IS NOT NULL
   ORDER BY (a.id = NEW.completed_by) DESC NULLS LAST, a.seq LIMIT 1;
  INSERT INTO settlements (job_id, principal_id, operation, job_status, billing, currency, provider_cost, billable,
                           input_tokens, output_tokens, attempts, attempts_unpriced, attempt_costs)
  SELECT NEW.id, NEW.principal_id, NEW.operation, NEW.status, NEW.billing, settlement_currency,
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
    FROM (SELECT 1) one LEFT JOIN attempts a ON a.job_id = NEW.id
  ON CONFLICT (job_id) DO NOTHING;
  RETURN NULL;
END;
$$;

CREATE CONSTRAINT TRIGGER jobs_settle_on_terminal
  AFTER UPDATE ON jobs
  DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW
  WHEN (OLD.terminal_at IS NULL AND NEW.terminal_at IS NOT NULL)
  EXECUTE FUNCTION settle_terminal_job();

-- Usage reported for an attempt of a job already settled: an adjustment row.
CREATE FUNCTION adjust_settlement_for_late_usage() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO settlement_adjustments (job_id, attempt_id, reason, currency, provider_cost, billable, input_tokens, output_tokens)
  SELECT s.job_id, NEW.id, 'late_usage', NEW.cost_currency, COALESCE(NEW.cost, 0),
         CASE WHEN s.billing = 'all_attempts' THEN COALESCE(NEW.cost, 0) ELSE 0 END,
         NEW.input_tokens, NEW.output_tokens
    FROM settlements s WHERE s.job_id = NEW.job_id
  ON CONFLICT (attempt_id) DO NOTHING;
  RETURN NULL;
END;
$$;

CREATE TRIGGER attempts_late_usage
  AFTER UPDATE OF usage_reported ON attempts
  FOR EACH ROW
  WHEN (NOT OLD.usage_reported AND NEW.usage_reported)
  EXECUTE FUNCTION adjust_settlement_for_late_usage();

-- An attempt's usage as the API shows it.
CREATE FUNCTION attempt_usage(a attempts) RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT CASE WHEN a.usage_reported THEN jsonb_strip_nulls(jsonb_build_object(
           'reported', true,
           'inputTokens', a.input_tokens,
           'outputTokens', a.output_tokens,
           'cachedTokens', a.cached_tokens,
           'model', a.model_used,
           'providerRequestId', a.provider_request_id,
           'latencyMs', a.latency_ms,
           'cost', a.cost::text,
           'currency', a.cost_currency))
         ELSE jsonb_build_object('reported', false) END
$$;

-- A job's settlement and its adjustments as the API shows them; NULL before settlement.
CREATE FUNCTION job_settlement(job uuid) RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT jsonb_strip_nulls(jsonb_build_object(
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
             FROM settlement_adjustments d WHERE d.job_id = s.job_id), '[]'::jsonb)))
    FROM settlements s WHERE s.job_id = job
$$;

-- The details document now carries each attempt's usage.
CREATE OR REPLACE FUNCTION job_details(job uuid) RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object(
    'attempts', COALESCE((
      SELECT jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
               'id', a.id,
               'seq', a.seq,
               'provider', a.provider,
               'model', a.model,
               'status', a.status,
               'startedAt', to_char(a.started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
               'endedAt', to_char(a.ended_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
               'error', CASE WHEN a.error_class IS NULL THEN NULL
                             ELSE jsonb_build_object('class', a.error_class, 'detail', a.error_detail) END,
               'evidence', a.evidence,
               'resolution', a.resolution,
               'usage', attempt_usage(a))) ORDER BY a.seq)
      FROM attempts a WHERE a.job_id = job), '[]'::jsonb),
    'effects', COALESCE((
      SELECT jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
               'name', e.name,
               'key', e.effect_key,
               'status', e.status,
               'phase', CASE WHEN e.status = 'pending' THEN e.phase END,
               'tries', e.tries,
               'receipt', e.receipt,
               'error', e.error,
               'lastLookup', e.last_lookup,
               'lookupFailures', NULLIF(e.lookup_failures, 0),
               'resolution', e.resolution,
               'owners', e.owners,
               'updatedAt', to_char(e.updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))) ORDER BY e.created_at, e.name)
      FROM effects e WHERE e.job_id = job), '[]'::jsonb),
    'events', COALESCE((
      SELECT jsonb_agg(jsonb_build_object(
               'type', v.type,
               'at', to_char(v.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
               'detail', v.detail) ORDER BY v.id)
      FROM job_events v WHERE v.job_id = job), '[]'::jsonb))
$$;
