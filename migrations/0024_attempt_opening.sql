-- An attempt's opening as one call, and a new job's first opening as one
-- round trip: the statement that locks the job row checks what the worker
-- decided on (the job is still accepted on its first run, driven by the same
-- workflow, on the same route version, with time for one attempt before its
-- deadline) and opens the attempt in the same transaction; when anything of
-- it no longer holds, nothing is opened and the worker takes the long way
-- (a transaction that locks the job row and looks at everything).

-- Opens an attempt in lane p_lane of a job whose row the caller holds.
-- Invariant 3: the partial unique index admits no second live attempt in a
-- lane; the conflict opens nothing (no row). The job's version is read inside
-- this statement: the attempt may win only if nothing changes from here on
-- (invariant 5). An accepted job becomes running with its first attempt, and
-- its events say so.
CREATE FUNCTION ledger_open_attempt(p_attempt uuid, p_job uuid, p_operation text, p_provider text, p_model text, p_lane integer)
RETURNS SETOF attempts
LANGUAGE plpgsql AS $$
BEGIN
  RETURN QUERY
  WITH opened AS (
    INSERT INTO attempts (id, job_id, operation, seq, provider, model, job_version, lane)
    VALUES (COALESCE(p_attempt, gen_random_uuid()), p_job, p_operation, (SELECT COALESCE(max(a.seq), 0) + 1 FROM attempts a WHERE a.job_id = p_job),
            p_provider, p_model, (SELECT j.version FROM jobs j WHERE j.id = p_job), p_lane)
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

-- A new job's first attempt, at the step the worker found eligible: the job
-- row is locked first, and the attempt opens only while the job is accepted
-- on its first run (so it has no attempt, no winner, and is not terminal:
-- its first attempt moves it out of accepted, and the schema ties a terminal
-- time to a terminal status), driven by p_workflow, on p_route_version,
-- and with at least p_min_attempt_ms left before its deadline (or none).
-- No row: nothing was opened. With p_send, the attempt is also marked sent
-- (`running`) in the same transaction, as the worker's last word before its
-- request goes out (its prompt rendered and fit): one commit instead of two,
-- with no more time between the mark and the request than before.
-- deadline_left_ms: the milliseconds left before the deadline by this
-- transaction's clock (NULL without one).
CREATE FUNCTION ledger_open_first_attempt(
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
  SELECT * INTO v_attempt FROM ledger_open_attempt(p_attempt, p_job, v_operation, p_provider, p_model, 0);
  IF v_attempt.id IS NULL THEN
    RETURN;
  END IF;
  IF p_send THEN
    UPDATE attempts a SET status = 'running' WHERE a.id = v_attempt.id RETURNING * INTO v_attempt;
  END IF;
  RETURN QUERY SELECT v_attempt, v_left;
END;
$$;
