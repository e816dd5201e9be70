-- What recovery and the sweeper need to be safe and bounded under faults.

-- An attempt carries its operation, so the run-time record of a provider
-- (contract violations among its recent answers) is read from one index
-- instead of a join over every attempt the provider ever made.
ALTER TABLE attempts ADD COLUMN operation text;
UPDATE attempts a SET operation = j.operation FROM jobs j WHERE j.id = a.job_id;
ALTER TABLE attempts ALTER COLUMN operation SET NOT NULL;
CREATE INDEX attempts_runtime_idx ON attempts (operation, provider, model, ended_at DESC)
  WHERE ended_at IS NOT NULL AND status IN ('succeeded', 'failed', 'discarded');

-- Where a claimed effect stands between its claim and its settlement:
--   claimed        nothing was sent yet: performing it is safe
--   sending        a try is out, or its answer was lost: only a receipt can tell
--   not_performed  the downstream refused the last try before acting (429, 503 ...): a new try is safe
-- Recovery reads it to decide between performing and looking the receipt up
-- (invariant 8); the owner moves it by compare-and-swap under its lease.
ALTER TABLE effects
  ADD COLUMN phase text NOT NULL DEFAULT 'claimed' CHECK (phase IN ('claimed', 'sending', 'not_performed')),
  ADD COLUMN tries integer NOT NULL DEFAULT 0,
  -- failed receipt lookups since the last conclusive one, and the last such failure
  ADD COLUMN lookup_failures integer NOT NULL DEFAULT 0,
  ADD COLUMN last_lookup jsonb;
-- Effects claimed before this migration may have been sent.
UPDATE effects SET phase = 'sending' WHERE status = 'pending';

-- Rows written by record.write are the application's data: retention removes
-- Onceflow's jobs, never them.
ALTER TABLE effect_records DROP CONSTRAINT effect_records_job_id_fkey;
CREATE INDEX effect_records_job_id_idx ON effect_records (job_id);

-- The sweeper starts or attaches the workflow of every open job it has not
-- looked at lately (invariant 11: no open job without a workflow that moves it).
ALTER TABLE jobs ADD COLUMN swept_at timestamptz;
CREATE INDEX jobs_open_idx ON jobs (created_at) WHERE terminal_at IS NULL;

-- The effects of a job in the details document also show where recovery stands.
CREATE OR REPLACE FUNCTION effects_into_details() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE jobs
     SET details = jsonb_set(details, '{effects}', COALESCE((
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
             FROM effects e WHERE e.job_id = NEW.job_id), '[]'::jsonb))
   WHERE id = NEW.job_id;
  RETURN NULL;
END;
$$;
