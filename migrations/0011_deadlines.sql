-- The caller's deadline, stored by the request that created the job and never
-- changed by a retry (it is not part of the intent, nor of its digest). NULL:
-- the job has none.
ALTER TABLE jobs ADD COLUMN deadline_at timestamptz;
