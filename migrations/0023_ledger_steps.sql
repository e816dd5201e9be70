-- The ledger's steps on a job's way, each one call: an answer's commit (the
-- result slot's compare-and-swap, the attempt's outcome and usage, and the
-- first effect's claim; or the lost race, recorded) and an effect's
-- settlement with the job's terminal write are one round trip each, and each
-- commits alone, instead of a transaction of several statements. Every
-- statement keeps its order: the job row is locked first, as every
-- transition does.

-- A terminal job's outcome as metrics count it: its status and the harms it
-- had on the way. No row while the job is open (or gone).
CREATE FUNCTION ledger_job_ended(p_job uuid)
RETURNS TABLE (operation text, route_version text, status text, with_unknowns boolean, with_contract_violations boolean, with_effects_in_review boolean)
LANGUAGE plpgsql STABLE AS $$
BEGIN
  RETURN QUERY
  SELECT j.operation, j.route_version, j.status,
         EXISTS (SELECT 1 FROM job_events e WHERE e.job_id = j.id AND e.type = 'attempt.unknown'),
         EXISTS (SELECT 1 FROM attempts a WHERE a.job_id = j.id AND a.error_class = 'contract_violation'),
         EXISTS (SELECT 1 FROM job_events e WHERE e.job_id = j.id AND e.type = 'effect.needs_review')
    FROM jobs j WHERE j.id = p_job AND j.terminal_at IS NOT NULL;
END;
$$;

-- The job's terminal write once its effects have all succeeded: the result is
-- the output with the receipts, written before anyone is told (invariant 7).
-- Only a job with a winner and not yet terminal; its event goes with it, and
-- its outcome comes back (no row: nothing was written).
CREATE FUNCTION ledger_finish_job(p_job uuid, p_result text)
RETURNS TABLE (operation text, route_version text, status text, with_unknowns boolean, with_contract_violations boolean, with_effects_in_review boolean)
LANGUAGE plpgsql AS $$
BEGIN
  UPDATE jobs j SET status = 'succeeded', result = p_result::jsonb, version = j.version + 1, terminal_at = now(), updated_at = now()
   WHERE j.id = p_job AND j.terminal_at IS NULL AND j.completed_by IS NOT NULL;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  INSERT INTO job_events (job_id, type, detail) VALUES (p_job, 'job.succeeded', '{}'::jsonb);
  RETURN QUERY SELECT * FROM ledger_job_ended(p_job);
END;
$$;

-- The terminal write of an effect, by its lease holder only (a former
-- owner's late write is refused), with its event; the job row is locked
-- first. With p_finish, the caller knows this settlement ends the job (the
-- operation's only effect, succeeded): the job's terminal write with
-- p_result follows in the same transaction.
-- settled: false when the caller no longer holds the lease (nothing written).
CREATE FUNCTION ledger_settle_effect(p_effect uuid, p_owner text, p_status text, p_receipt text, p_error text, p_finish boolean, p_result text)
RETURNS TABLE (settled boolean, ended jsonb)
LANGUAGE plpgsql AS $$
DECLARE
  v_job uuid;
  v_name text;
  v_ended jsonb;
BEGIN
  PERFORM 1 FROM jobs j WHERE j.id = (SELECT e.job_id FROM effects e WHERE e.id = p_effect) FOR UPDATE;
  UPDATE effects e SET status = p_status, receipt = p_receipt::jsonb, error = p_error::jsonb, settled_at = now(), updated_at = now(),
         lease_owner = NULL, lease_expires_at = NULL
   WHERE e.id = p_effect AND e.status = 'pending' AND e.lease_owner = p_owner
  RETURNING e.job_id, e.name INTO v_job, v_name;
  IF NOT FOUND THEN
    RETURN QUERY SELECT false, NULL::jsonb;
    RETURN;
  END IF;
  INSERT INTO job_events (job_id, type, detail)
  VALUES (v_job, CASE WHEN p_status = 'needs_review' THEN 'effect.needs_review' ELSE 'effect.settled' END,
          jsonb_strip_nulls(jsonb_build_object('name', v_name, 'status', p_status, 'receipt', p_receipt::jsonb, 'error', p_error::jsonb)));
  IF p_finish THEN
    SELECT to_jsonb(f) INTO v_ended FROM ledger_finish_job(v_job, p_result) f;
  END IF;
  RETURN QUERY SELECT true, v_ended;
END;
$$;

-- An attempt's usage, written once (invariant 13: the first report stands;
-- nothing sent costs exactly 0, in any currency). The cost is computed here,
-- in numeric. No row when the usage was reported already.
CREATE FUNCTION ledger_record_usage(
  p_attempt uuid, p_input bigint, p_output bigint, p_cached bigint, p_model text, p_request_id text, p_latency integer,
  p_input_price numeric, p_output_price numeric, p_currency text)
RETURNS TABLE (input_tokens bigint, output_tokens bigint, cost text, cost_currency text)
LANGUAGE plpgsql AS $$
BEGIN
  RETURN QUERY
  UPDATE attempts a SET usage_reported = true, input_tokens = p_input, output_tokens = p_output, cached_tokens = p_cached, model_used = p_model,
         provider_request_id = p_request_id, latency_ms = p_latency, cost_currency = p_currency,
         cost = CASE WHEN p_input = 0 AND p_output = 0 THEN 0
                     WHEN p_input_price IS NULL OR p_output_price IS NULL THEN NULL
                     ELSE trim_scale((p_input * p_input_price + p_output * p_output_price) / 1000000) END
   WHERE a.id = p_attempt AND NOT a.usage_reported
  RETURNING a.input_tokens, a.output_tokens, a.cost::text, a.cost_currency;
END;
$$;

-- The claim of a job's effect before it happens (invariant 7): the caller
-- holds the job row and has checked that the job has its winner and is open.
-- Exactly one caller gets the row back; only that caller may perform it.
CREATE FUNCTION ledger_claim_effect(p_job uuid, p_name text, p_key text, p_owner text, p_lease_ms bigint)
RETURNS TABLE (id uuid, job_id uuid, name text, effect_key text, status text, phase text, tries integer, lookup_failures integer,
               lease_owner text, lease_expires_at timestamptz, owners integer, receipt jsonb, error jsonb, resolution jsonb, lease_remaining_ms bigint)
LANGUAGE plpgsql AS $$
DECLARE
  claimed effects%ROWTYPE;
BEGIN
  INSERT INTO effects AS e (job_id, name, effect_key, lease_owner, lease_expires_at)
  VALUES (p_job, p_name, p_key, p_owner, now() + p_lease_ms * interval '1 millisecond')
  ON CONFLICT ON CONSTRAINT effects_one_per_job_and_name DO NOTHING
  RETURNING e.* INTO claimed;
  IF claimed.id IS NULL THEN
    RETURN;
  END IF;
  INSERT INTO job_events (job_id, type, detail) VALUES (p_job, 'effect.claimed', jsonb_build_object('name', claimed.name, 'owner', claimed.lease_owner));
  RETURN QUERY SELECT claimed.id, claimed.job_id, claimed.name, claimed.effect_key, claimed.status, claimed.phase, claimed.tries, claimed.lookup_failures,
                      claimed.lease_owner, claimed.lease_expires_at, claimed.owners, claimed.receipt, claimed.error, claimed.resolution,
                      GREATEST(0, floor(extract(epoch FROM (claimed.lease_expires_at - now())) * 1000))::bigint;
END;
$$;

-- An answer offered to its job's result slot, in one call.
--
-- It enters only by compare-and-swap on the version the attempt opened with
-- (invariant 5): every change after which an attempt opened earlier must not
-- win bumps the version, and `completed_by IS NULL` says the same of a
-- winner in so many words. A hedged job's attempts run side by side: each may
-- win while it is live and the job is open, whatever its siblings did
-- meanwhile. With p_terminal (no effects) the job ends with p_result at once;
-- otherwise the output waits in jobs.output, and the first effect is claimed
-- (p_claim_name) in the same transaction.
--
-- A miss records the race: a live attempt becomes discarded, an ended one
-- (an operator's resolution among them: invariant 12) keeps its status and
-- the answer is evidence; the usage is recorded all the same. An attempt's
-- own answer offered again (by its call and by a reconciliation) has won
-- already.
--
-- outcome: succeeded, discarded or late; usage: what was recorded; claimed:
-- the effect claimed; ended: the job's outcome when this ended it.
CREATE FUNCTION ledger_commit_answer(
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
  winner uuid;
  job_status text;
  attempt_status text;
  output_sha256 text;
  race jsonb;
BEGIN
  -- Two statements, not one with a flag: each keeps its own plan.
  IF p_hedged THEN
    UPDATE jobs SET output = p_output::jsonb, completed_by = p_attempt, version = version + 1, updated_at = now(),
           status = CASE WHEN p_terminal THEN 'succeeded' ELSE 'running' END,
           result = CASE WHEN p_terminal THEN p_result::jsonb ELSE NULL END,
           terminal_at = CASE WHEN p_terminal THEN now() ELSE NULL END
     WHERE id = p_job AND completed_by IS NULL
       AND (version = p_version OR (terminal_at IS NULL AND EXISTS (SELECT 1 FROM attempts WHERE id = p_attempt AND status IN ('running', 'unknown'))));
  ELSE
    UPDATE jobs SET output = p_output::jsonb, completed_by = p_attempt, version = version + 1, updated_at = now(),
           status = CASE WHEN p_terminal THEN 'succeeded' ELSE 'running' END,
           result = CASE WHEN p_terminal THEN p_result::jsonb ELSE NULL END,
           terminal_at = CASE WHEN p_terminal THEN now() ELSE NULL END
     WHERE id = p_job AND completed_by IS NULL AND version = p_version;
  END IF;
  won := FOUND;

  IF won THEN
    UPDATE attempts SET status = 'succeeded', ended_at = now() WHERE id = p_attempt AND status IN ('running', 'unknown');
    IF NOT FOUND THEN
      RAISE EXCEPTION 'attempt % won the result slot while not live; the ledger is inconsistent', p_attempt;
    END IF;
    INSERT INTO job_events (job_id, type, detail) VALUES (p_job, 'attempt.succeeded', jsonb_build_object('attemptId', p_attempt, 'provider', p_provider));
    IF p_terminal THEN
      INSERT INTO job_events (job_id, type, detail) VALUES (p_job, 'job.succeeded', jsonb_build_object('attemptId', p_attempt));
    END IF;
    IF p_usage THEN
      SELECT to_jsonb(u) INTO v_usage FROM ledger_record_usage(p_attempt, p_input, p_output_tokens, p_cached, p_model, p_request_id, p_latency, p_input_price, p_output_price, p_currency) u;
    END IF;
    IF p_claim_name IS NOT NULL AND NOT p_terminal THEN
      SELECT to_jsonb(c) INTO v_claimed FROM ledger_claim_effect(p_job, p_claim_name, p_claim_key, p_claim_owner, p_claim_lease_ms) c;
    END IF;
    IF p_terminal THEN
      SELECT to_jsonb(e) INTO v_ended FROM ledger_job_ended(p_job) e;
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
