-- Each ledger step writes a row once for each change it makes to it, not once
-- for each statement that touches it. Every new version of a row is a heap
-- tuple and, unless the update is HOT, an entry in each of its table's
-- indexes; a terminal job's row also carries its details document, which the
-- terminal write builds and every later write of the job's attempts, effects
-- or events rebuilds. So:
-- - a first attempt opened already sent is inserted `running`, not inserted
--   `starting` and updated;
-- - a winning attempt's outcome and usage are one update;
-- - a terminal write comes after the events written with it, so its document
--   is built once, complete, and nothing rebuilds it in the same transaction.
-- What each step does, and in which order it takes its locks, is unchanged.

-- An attempt's cost from its usage (invariant 13: nothing sent costs exactly
-- 0, in any currency), in numeric; NULL when a price is not known.
CREATE FUNCTION ledger_usage_cost(p_input bigint, p_output bigint, p_input_price numeric, p_output_price numeric)
RETURNS numeric
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN p_input = 0 AND p_output = 0 THEN 0
              WHEN p_input_price IS NULL OR p_output_price IS NULL THEN NULL
              ELSE trim_scale((p_input * p_input_price + p_output * p_output_price) / 1000000) END
$$;

CREATE OR REPLACE FUNCTION ledger_record_usage(
  p_attempt uuid, p_input bigint, p_output bigint, p_cached bigint, p_model text, p_request_id text, p_latency integer,
  p_input_price numeric, p_output_price numeric, p_currency text)
RETURNS TABLE (input_tokens bigint, output_tokens bigint, cost text, cost_currency text)
LANGUAGE plpgsql AS $$
BEGIN
  RETURN QUERY
  UPDATE attempts a SET usage_reported = true, input_tokens = p_input, output_tokens = p_output, cached_tokens = p_cached, model_used = p_model,
         provider_request_id = p_request_id, latency_ms = p_latency, cost_currency = p_currency,
         cost = ledger_usage_cost(p_input, p_output, p_input_price, p_output_price)
   WHERE a.id = p_attempt AND NOT a.usage_reported
  RETURNING a.input_tokens, a.output_tokens, a.cost::text, a.cost_currency;
END;
$$;

-- An attempt opened in lane p_lane as p_status: `starting`, or `running` when
-- its request goes out next (ledger_open_first_attempt). Otherwise as before
-- (migration 0024): the partial unique index admits no second live attempt in
-- a lane (invariant 3), and the attempt's version is the job's as it opens.
DROP FUNCTION ledger_open_attempt(uuid, uuid, text, text, text, integer);
CREATE FUNCTION ledger_open_attempt(p_attempt uuid, p_job uuid, p_operation text, p_provider text, p_model text, p_lane integer, p_status text DEFAULT 'starting')
RETURNS SETOF attempts
LANGUAGE plpgsql AS $$
BEGIN
  RETURN QUERY
  WITH opened AS (
    INSERT INTO attempts (id, job_id, operation, seq, provider, model, job_version, lane, status)
    VALUES (COALESCE(p_attempt, gen_random_uuid()), p_job, p_operation, (SELECT COALESCE(max(a.seq), 0) + 1 FROM attempts a WHERE a.job_id = p_job),
            p_provider, p_model, (SELECT j.version FROM jobs j WHERE j.id = p_job), p_lane, p_status)
    ON CONFLICT (job_id, lane) WHERE status IN ('starting', 'running', 'unknown') DO NOTHING
    RETURNING *
  ), moved AS (
    UPDATE jobs j SET status = 'running', updated_at = now()
      FROM jobs before
     WHERE j.id = p_job AND before.id = j.id AND j.status IN ('accepted', 'awaiting_resolution') AND EXISTS (SELECT 1 FROM opened)
    RETURNING before.status AS was
  ), noted AS (
    INSERT INTO job_events (job_id, type, detail)
    SELECT p_job, event.type, event.detail FROM (
      SELECT 1 AS n, 'job.running' AS type, '{}'::jsonb AS detail FROM moved WHERE was = 'accepted'
      UNION ALL
      SELECT 2, 'attempt.opened', jsonb_build_object('attemptId', o.id, 'seq', o.seq, 'provider', o.provider, 'model', o.model) FROM opened o
    ) event ORDER BY event.n
  )
  SELECT * FROM opened;
END;
$$;

-- As in migration 0024; with p_send, the attempt is inserted marked sent.
CREATE OR REPLACE FUNCTION ledger_open_first_attempt(
  p_job uuid, p_attempt uuid, p_workflow text, p_route_version text, p_provider text, p_model text, p_min_attempt_ms bigint, p_send boolean)
RETURNS TABLE (attempt attempts, deadline_left_ms bigint)
LANGUAGE plpgsql AS $$
DECLARE
  v_operation text;
  v_left bigint;
  v_attempt attempts;
BEGIN
  SELECT j.operation, floor(extract(epoch FROM j.deadline_at - now()) * 1000)::bigint INTO v_operation, v_left
    FROM jobs j
   WHERE j.id = p_job AND j.status = 'accepted' AND j.run = 1 AND j.workflow_id = p_workflow AND j.route_version IS NOT DISTINCT FROM p_route_version
     FOR UPDATE;
  IF NOT FOUND OR (v_left IS NOT NULL AND v_left < p_min_attempt_ms) THEN
    RETURN;
  END IF;
  SELECT * INTO v_attempt FROM ledger_open_attempt(p_attempt, p_job, v_operation, p_provider, p_model, 0, CASE WHEN p_send THEN 'running' ELSE 'starting' END);
  IF v_attempt.id IS NULL THEN
    RETURN;
  END IF;
  RETURN QUERY SELECT v_attempt, v_left;
END;
$$;

-- As in migration 0023, with the job row held: its event first, then the
-- terminal write, whose document so holds the event.
CREATE OR REPLACE FUNCTION ledger_finish_job(p_job uuid, p_result text)
RETURNS TABLE (operation text, route_version text, status text, with_unknowns boolean, with_contract_violations boolean, with_effects_in_review boolean)
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1 FROM jobs j WHERE j.id = p_job AND j.terminal_at IS NULL AND j.completed_by IS NOT NULL FOR UPDATE;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  INSERT INTO job_events (job_id, type, detail) VALUES (p_job, 'job.succeeded', '{}'::jsonb);
  UPDATE jobs j SET status = 'succeeded', result = p_result::jsonb, version = j.version + 1, terminal_at = now(), updated_at = now()
   WHERE j.id = p_job;
  RETURN QUERY SELECT * FROM ledger_job_ended(p_job);
END;
$$;

-- As in migration 0023, but a winner's outcome and usage are one update of
-- its attempt, and an answer that ends the job is written in two steps: the
-- compare-and-swap takes the result slot (the job stays running), and the
-- terminal write follows the attempt's outcome and the events.
CREATE OR REPLACE FUNCTION ledger_commit_answer(
  p_job uuid, p_attempt uuid, p_provider text, p_output text, p_version bigint, p_hedged boolean,
  p_terminal boolean, p_result text, p_now text,
  p_usage boolean, p_input bigint, p_output_tokens bigint, p_cached bigint, p_model text, p_request_id text, p_latency integer,
  p_input_price numeric, p_output_price numeric, p_currency text,
  p_claim_name text, p_claim_key text, p_claim_owner text, p_claim_lease_ms bigint)
RETURNS TABLE (outcome text, usage jsonb, claimed jsonb, ended jsonb)
LANGUAGE plpgsql AS $$
DECLARE
  won boolean;
  v_usage jsonb;
  v_claimed jsonb;
  v_ended jsonb;
  v_reported boolean;
  winner uuid;
  job_status text;
  attempt_status text;
  output_sha256 text;
  race jsonb;
BEGIN
  -- Two statements, not one with a flag: each keeps its own plan.
  IF p_hedged THEN
    UPDATE jobs SET output = p_output::jsonb, completed_by = p_attempt, version = version + 1, updated_at = now(),
           status = 'running', result = NULL, terminal_at = NULL
     WHERE id = p_job AND completed_by IS NULL
       AND (version = p_version OR (terminal_at IS NULL AND EXISTS (SELECT 1 FROM attempts WHERE id = p_attempt AND status IN ('running', 'unknown'))));
  ELSE
    UPDATE jobs SET output = p_output::jsonb, completed_by = p_attempt, version = version + 1, updated_at = now(),
           status = 'running', result = NULL, terminal_at = NULL
     WHERE id = p_job AND completed_by IS NULL AND version = p_version;
  END IF;
  won := FOUND;

  IF won THEN
    -- Invariant 13: the first usage report stands (an attempt reported already keeps its numbers).
    SELECT a.usage_reported INTO v_reported FROM attempts a WHERE a.id = p_attempt AND a.status IN ('running', 'unknown') FOR UPDATE;
    IF NOT FOUND THEN
      RAISE EXCEPTION 'attempt % won the result slot while not live; the ledger is inconsistent', p_attempt;
    END IF;
    IF p_usage AND NOT v_reported THEN
      UPDATE attempts a SET status = 'succeeded', ended_at = now(),
             usage_reported = true, input_tokens = p_input, output_tokens = p_output_tokens, cached_tokens = p_cached, model_used = p_model,
             provider_request_id = p_request_id, latency_ms = p_latency, cost_currency = p_currency,
             cost = ledger_usage_cost(p_input, p_output_tokens, p_input_price, p_output_price)
       WHERE a.id = p_attempt
      RETURNING jsonb_build_object('input_tokens', a.input_tokens, 'output_tokens', a.output_tokens, 'cost', a.cost::text, 'cost_currency', a.cost_currency) INTO v_usage;
    ELSE
      UPDATE attempts SET status = 'succeeded', ended_at = now() WHERE id = p_attempt;
    END IF;
    INSERT INTO job_events (job_id, type, detail) VALUES (p_job, 'attempt.succeeded', jsonb_build_object('attemptId', p_attempt, 'provider', p_provider));
    IF p_terminal THEN
      INSERT INTO job_events (job_id, type, detail) VALUES (p_job, 'job.succeeded', jsonb_build_object('attemptId', p_attempt));
      UPDATE jobs SET status = 'succeeded', result = p_result::jsonb, terminal_at = now() WHERE id = p_job;
      SELECT to_jsonb(e) INTO v_ended FROM ledger_job_ended(p_job) e;
    ELSIF p_claim_name IS NOT NULL THEN
      SELECT to_jsonb(c) INTO v_claimed FROM ledger_claim_effect(p_job, p_claim_name, p_claim_key, p_claim_owner, p_claim_lease_ms) c;
    END IF;
    RETURN QUERY SELECT 'succeeded'::text, v_usage, v_claimed, v_ended;
    RETURN;
  END IF;

  SELECT j.completed_by, j.status INTO winner, job_status FROM jobs j WHERE j.id = p_job FOR UPDATE;
  IF winner = p_attempt THEN
    RETURN QUERY SELECT 'succeeded'::text, NULL::jsonb, NULL::jsonb, NULL::jsonb;
    RETURN;
  END IF;
  output_sha256 := encode(sha256(convert_to(COALESCE(p_output, ''), 'UTF8')), 'hex');
  SELECT a.status INTO attempt_status FROM attempts a WHERE a.id = p_attempt;
  race := jsonb_build_object('discardedOutputSha256', output_sha256, 'statusWhenDiscarded', attempt_status, 'winner', winner);
  UPDATE attempts SET status = 'discarded', ended_at = COALESCE(ended_at, now()), evidence = COALESCE(evidence, '{}'::jsonb) || race
   WHERE id = p_attempt AND status IN ('running', 'unknown');
  IF FOUND THEN
    outcome := 'discarded';
  ELSE
    UPDATE attempts SET evidence = COALESCE(evidence, '{}'::jsonb) || jsonb_build_object('lateAnswer', jsonb_build_object('at', p_now, 'outputSha256', output_sha256, 'winner', winner))
     WHERE id = p_attempt;
    outcome := 'late';
  END IF;
  IF p_usage THEN
    SELECT to_jsonb(u) INTO v_usage FROM ledger_record_usage(p_attempt, p_input, p_output_tokens, p_cached, p_model, p_request_id, p_latency, p_input_price, p_output_price, p_currency) u;
  END IF;
  INSERT INTO job_events (job_id, type, detail)
  VALUES (p_job, 'attempt.race_lost', jsonb_build_object('attemptId', p_attempt, 'provider', p_provider, 'jobStatus', job_status) || race);
  RETURN QUERY SELECT outcome, v_usage, NULL::jsonb, NULL::jsonb;
END;
$$;
