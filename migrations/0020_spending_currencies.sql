-- One account of spending (invariant 15), in every currency. A settlement
-- adds up the attempts priced in its own currency (the winner's); one priced
-- in another is counted in attempts_unpriced and was in no total. The view
-- now adds each such attempt's cost, in its own currency, from the cost the
-- settlement recorded for it (billable as the policy says: every attempt
-- under all_attempts; a winner is always in the settlement's currency).
CREATE OR REPLACE VIEW spending AS
  SELECT s.principal_id, s.operation, s.job_id, s.run, s.settled_at AS at, s.currency,
         s.provider_cost, s.billable, s.input_tokens, s.output_tokens, 1 AS bills
    FROM settlements s
  UNION ALL
  SELECT d.principal_id, d.operation, d.job_id, d.run, d.created_at AS at, d.currency,
         d.provider_cost, d.billable, d.input_tokens, d.output_tokens, 0 AS bills
    FROM settlement_adjustments d
  UNION ALL
  SELECT s.principal_id, s.operation, s.job_id, s.run, s.settled_at AS at, c ->> 'currency',
         (c ->> 'cost')::numeric,
         CASE WHEN s.billing = 'all_attempts' THEN (c ->> 'cost')::numeric ELSE 0 END,
         0::bigint, 0::bigint, 0 AS bills
    FROM settlements s CROSS JOIN LATERAL jsonb_array_elements(s.attempt_costs) c
   WHERE (c ->> 'reported')::boolean AND c ->> 'currency' IS DISTINCT FROM s.currency AND (c ->> 'cost')::numeric > 0;
