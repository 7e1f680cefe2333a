-- advice: macros of the advice mart, so that each of its findings states its evidence one way.
--
-- advice_scope_filter(scope, scope_name)
--   the SQL filter that selects a finding's rows in ai_core_metrics or task_scheduler: for an
--   op, op_name = '<name>' (quotes doubled); for a task without an op ("stream S task T"),
--   stream_id = S and task_id = T and op_name is null.

create or replace macro advice_scope_filter(scope, scope_name) as
    case when scope = 'op' then format('op_name = ''{}''', replace(scope_name, '''', ''''''))
         else replace(replace(scope_name, 'stream ', 'stream_id = '), ' task ', ' and task_id = ')
              || ' and op_name is null' end;
