-- The winning attempt's output, kept while the job's effects run; the job's
-- result (output plus receipts) is written when they have settled.
ALTER TABLE jobs ADD COLUMN output jsonb;

-- One side effect of a job: claimed here before it happens, settled with the
-- downstream's receipt after (invariants 7 and 8).
CREATE TABLE effects (
  id               uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
  job_id           uuid        NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
  name             text        NOT NULL,
  -- derived from the job; sent downstream as the idempotency key
  effect_key       text        NOT NULL,
  status           text        NOT NULL DEFAULT 'pending'
                   CHECK (status IN ('pending', 'succeeded', 'failed', 'needs_review')),
  -- who may perform or settle it now, and until when (a lease, not a lock)
  lease_owner      text,
  lease_expires_at timestamptz,
  -- how many owners have held it: 1 = never taken over
  owners           integer     NOT NULL DEFAULT 1,
  receipt          jsonb,
  error            jsonb,
  resolution       jsonb,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  settled_at       timestamptz,
  CONSTRAINT effects_one_per_job_and_name UNIQUE (job_id, name),
  CONSTRAINT effects_key_unique UNIQUE (effect_key),
  CONSTRAINT effects_settled_at_when_settled CHECK ((settled_at IS NULL) = (status = 'pending'))
);

CREATE INDEX effects_pending_lease_idx ON effects (lease_expires_at) WHERE status = 'pending';

-- Records written by the record.write effect: the application's own data,
-- committed in the same transaction as the effect's settlement.
CREATE TABLE effect_records (
  effect_key  text        PRIMARY KEY,
  job_id      uuid        NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
  payload     jsonb       NOT NULL,
  written_at  timestamptz NOT NULL DEFAULT now()
);

-- Keeps jobs.details.effects equal to the job's effects, in the same transaction.
CREATE FUNCTION effects_into_details() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE jobs
     SET details = jsonb_set(details, '{effects}', COALESCE((
           SELECT jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
                    'name', e.name,
                    'key', e.effect_key,
                    'status', e.status,
                    'receipt', e.receipt,
                    'error', e.error,
                    'resolution', e.resolution,
                    'owners', e.owners,
                    'updatedAt', to_char(e.updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))) ORDER BY e.created_at, e.name)
             FROM effects e WHERE e.job_id = NEW.job_id), '[]'::jsonb))
   WHERE id = NEW.job_id;
  RETURN NULL;
END;
$$;

CREATE TRIGGER effects_details
  AFTER INSERT OR UPDATE ON effects
  FOR EACH ROW
  EXECUTE FUNCTION effects_into_details();
