-- waits: the wait before a task execution as profetl recomputes it, written once.
--
-- idle_before_ns(same_device, start_ns, previous_end_ns)
--   msprof's Task Wait Time (docs/formats.md#rule-op-summary): the execution's start minus the
--   end of the execution before it in the device's start-ordered list (all streams together),
--   never below 0; 0 for the device's first execution (same_device false: the previous row is
--   another device's) and where the previous execution has no end. The caller gives the
--   previous row's device and end in its own order (lag). Read by op_summary (its
--   wait_recomputed_ns, and wait_ns where the export has no wait of its own) and by the
--   export_wait_differs check of build_issues (docs/formats.md#export-wait).

create or replace macro idle_before_ns(same_device, start_ns, previous_end_ns) as
    case
        when coalesce(same_device, false) then coalesce(greatest(start_ns - previous_end_ns, 0), 0)
        else 0
    end;
