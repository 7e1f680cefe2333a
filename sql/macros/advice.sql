-- advice: macros of the advice mart, so that each of its findings states its evidence one way.
--
-- advice_scope_filter(scope, scope_name)
--   the SQL filter that selects a finding's rows in ai_core_metrics or task_scheduler: for an
--   op, op_name = '<name>' (quotes doubled); for a task without an op ("stream S task T"),
--   stream_id = S and task_id = T and op_name is null.
-- advice_exact_sum(x)
--   sum(x) of doubles as the same value whatever order the rows come in (a run built in one
--   piece or device by device): each term rounded to 12 decimals and summed as a DECIMAL(38, 12),
--   which is exact, then back to a double. A plain aggregate whose state is one number, so it
--   spills beyond the memory limit like any other; an ordered aggregate (`sum(x order by x)`)
--   holds every term of its group in memory. Terms and sums up to 10^26.

create or replace macro advice_scope_filter(scope, scope_name) as
    case when scope = 'op' then format('op_name = ''{}''', replace(scope_name, '''', ''''''))
         else replace(replace(scope_name, 'stream ', 'stream_id = '), ' task ', ' and task_id = ')
              || ' and op_name is null' end;

create or replace macro advice_exact_sum(x) as sum(x::decimal(38, 12))::double;
