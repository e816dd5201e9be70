-- Attempts whose cost is still to learn after their job moved on, for the
-- sweeper: unknown in an ended job, or resolved by an operator before the
-- provider said what it did. Both sets are small; the partial indexes keep
-- each sweep from reading the attempts table.
CREATE INDEX attempts_unknown_idx ON attempts (started_at) WHERE status = 'unknown';
CREATE INDEX attempts_resolved_unmetered_idx ON attempts (started_at) WHERE resolution IS NOT NULL AND NOT usage_reported;
