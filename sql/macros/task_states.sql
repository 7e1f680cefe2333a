-- task_states: macros for the times of a task instance's states, so each is written once.
--
-- task_waiting_ns(waiting_ns, running_ns, complete_ns)
--   an instance's waiting time, msprof's calculate_task_schedule_data
--   (docs/formats.md#rule-task-scheduler): running - waiting, or complete - waiting when
--   RUNNING is missing or earlier than WAITING; 0 without WAITING. Read by task_scheduler
--   (where the source has waiting states) and by the queue_dominant rule of int_warnings.

create or replace macro task_waiting_ns(waiting_ns, running_ns, complete_ns) as
    case
        when waiting_ns is null then 0
        when running_ns is null or running_ns < waiting_ns then complete_ns - waiting_ns
        else running_ns - waiting_ns
    end;
