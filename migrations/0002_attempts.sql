-- One try at a job's AI step against one provider. Attempts pile up under a
-- job; the job never changes identity.
CREATE TABLE attempts (
  id           uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
  job_id       uuid        NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
  seq          integer     NOT NULL,
  provider     text        NOT NULL,
  model        text        NOT NULL,
  status       text        NOT NULL DEFAULT 'starting'
               CHECK (status IN ('starting', 'running', 'unknown', 'succeeded', 'failed', 'cancelled', 'discarded')),
  -- the job's version when this attempt opened: its result may enter only if
  -- nothing changed since (invariant 5)
  job_version  bigint      NOT NULL,
  started_at   timestamptz NOT NULL DEFAULT now(),
  ended_at     timestamptz,
  error_class  text,
  error_detail text,
  -- what is known about the outcome: provider lookups, a discarded output's digest, ...
  evidence     jsonb,
  -- an operator's out-of-band resolution: {outcome, reason, by, at}
  resolution   jsonb,
  CONSTRAINT attempts_seq_unique UNIQUE (job_id, seq)
);

-- Invariant 3: at most one live attempt per job, enforced here and not only in
-- workflow code. Opening a second one fails with a unique violation.
CREATE UNIQUE INDEX attempts_one_live_per_job ON attempts (job_id) WHERE status IN ('starting', 'running', 'unknown');

-- The attempt whose result is the job's result (set by the compare-and-swap).
ALTER TABLE jobs ADD COLUMN completed_by uuid REFERENCES attempts (id);

-- Keeps jobs.details.attempts equal to the job's attempts, in the same transaction.
CREATE FUNCTION attempts_into_details() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE jobs
     SET details = jsonb_set(details, '{attempts}', COALESCE((
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
             FROM attempts a WHERE a.job_id = NEW.job_id), '[]'::jsonb))
   WHERE id = NEW.job_id;
  RETURN NULL;
END;
$$;

CREATE TRIGGER attempts_details
  AFTER INSERT OR UPDATE ON attempts
  FOR EACH ROW
  EXECUTE FUNCTION attempts_into_details();
