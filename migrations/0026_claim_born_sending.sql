-- A claim born `sending`: the first effect of a winning answer may be
-- claimed already in its first try, in the commit that claims it, so the
-- try's own mark (UPDATE effects SET phase = 'sending') is not a write of its
-- own before the request goes out. The caller asks for it only when the
-- effect's receipt lookup holds a current, verified pass (invariant 14): a
-- worker lost between this commit and the send then leaves a claim that
-- recovery settles by looking the receipt up first (invariant 8), as it
-- settles any try whose answer was lost; a "not found" from that lookup
-- makes the send its first. Without a verified lookup the claim is born
-- `claimed`, and the try is marked before it goes out, as before.

DROP FUNCTION ledger_commit_answer(uuid, uuid, text, text, bigint, boolean, boolean, text, text, boolean, bigint, bigint, bigint, text, text, integer, numeric, numeric, text, text, text, text, bigint);
DROP FUNCTION ledger_claim_effect(uuid, text, text, text, bigint);

CREATE FUNCTION ledger_claim_effect(p_job uuid, p_name text, p_key text, p_owner text, p_lease_ms bigint, p_sending boolean DEFAULT false)
RETURNS TABLE (id uuid, job_id uuid, name text, effect_key text, status text, phase text, tries integer, lookup_failures integer,
               lease_owner text, lease_expires_at timestamptz, owners integer, receipt jsonb, error jsonb, resolution jsonb, lease_remaining_ms bigint)
LANGUAGE plpgsql AS $$
DECLARE
  claimed effects%ROWTYPE;
BEGIN
  INSERT INTO effects AS e (job_id, name, effect_key, lease_owner, lease_expires_at, phase, tries)
  VALUES (p_job, p_name, p_key, p_owner, now() + p_lease_ms * interval '1 millisecond',
          CASE WHEN p_sending THEN 'sending' ELSE 'claimed' END, CASE WHEN p_sending THEN 1 ELSE 0 END)
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

CREATE FUNCTION ledger_commit_answer(
  p_job uuid, p_attempt uuid, p_provider text, p_output text, p_version bigint, p_hedged boolean,
  p_terminal boolean, p_result text, p_now text,
  p_usage boolean, p_input bigint, p_output_tokens bigint, p_cached bigint, p_model text, p_request_id text, p_latency integer,
  p_input_price numeric, p_output_price numeric, p_currency text,
  p_claim_name text, p_claim_key text, p_claim_owner text, p_claim_lease_ms bigint, p_claim_sending boolean)
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
      SELECT to_jsonb(c) INTO v_claimed FROM ledger_claim_effect(p_job, p_claim_name, p_claim_key, p_claim_owner, p_claim_lease_ms, p_claim_sending) c;
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
