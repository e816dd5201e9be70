-- A job's details document (attempts, effects, events: what the API shows
-- beside the row) is kept on the row only once the job is terminal, where a
-- replay reads it in one row. While a job runs, readers build it from the
-- child tables (job_details), so the writes of a running job no longer
-- rewrite its row each time.

CREATE FUNCTION job_details(job uuid) RETURNS jsonb LANGUAGE sql STABLE AS $$
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
               'resolution', a.resolution)) ORDER BY a.seq)
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

-- A change to a terminal job's attempts, effects or events (a late answer,
-- an operator's settlement) refreshes its document; a running job's is built
-- when read.
CREATE FUNCTION refresh_terminal_job_details() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE jobs SET details = job_details(NEW.job_id) WHERE id = NEW.job_id AND terminal_at IS NOT NULL;
  RETURN NULL;
END;
$$;

DROP TRIGGER attempts_details ON attempts;
DROP TRIGGER effects_details ON effects;
DROP TRIGGER job_events_details ON job_events;
DROP FUNCTION attempts_into_details();
DROP FUNCTION effects_into_details();
DROP FUNCTION job_events_into_details();

CREATE TRIGGER attempts_details AFTER INSERT OR UPDATE ON attempts FOR EACH ROW EXECUTE FUNCTION refresh_terminal_job_details();
CREATE TRIGGER effects_details AFTER INSERT OR UPDATE ON effects FOR EACH ROW EXECUTE FUNCTION refresh_terminal_job_details();
CREATE TRIGGER job_events_details AFTER INSERT ON job_events FOR EACH ROW EXECUTE FUNCTION refresh_terminal_job_details();

-- The terminal write itself stores the document (the events written with it
-- in the same transaction refresh it once more).
CREATE FUNCTION jobs_details_on_terminal() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.details := job_details(NEW.id);
  RETURN NEW;
END;
$$;

CREATE TRIGGER jobs_details_on_terminal
  BEFORE UPDATE ON jobs
  FOR EACH ROW
  WHEN (OLD.terminal_at IS NULL AND NEW.terminal_at IS NOT NULL)
  EXECUTE FUNCTION jobs_details_on_terminal();
