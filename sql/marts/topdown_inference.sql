-- topdown_inference: per inference, the span of each module of the inference workflow.
--
-- Grain:   (run_id, device_id, infer_id, module_name, api_name); api_name NULL is a value
-- Sources: stg_api_calls, stg_model_phases, stg_iterations, stg_task_instances
-- Follows: msprof 2022 top_down_report (docs/formats.md#rule-topdown), rows in the order
--          ACL, GE Input / Infer / Output, Runtime, Task Scheduler:
--            ACL            the k-th aclmdlExecute call of the device (aclopExecute when
--                           there is none), by start time (msprof: storage order)
--            GE             the k-th model_time record's input, infer and output phases
--            Runtime        first start to last end of the kernel-launching runtime calls
--                           (name containing KernelLaunch or LaunchKernel, any case:
--                           rtKernelLaunch, CpuKernelLaunch, KernelLaunchWithHandle, ...)
--                           that start inside inference k's window. msprof spans its
--                           KernelLaunch calls too, but over the whole run, the same span
--                           for every k; here per inference. Other runtime calls
--                           (StreamSynchronize, memory copies, ...) take no part, so the row
--                           is the launch time, not the whole AscendCL call
--            Task Scheduler first start (RUNNING, else PENDING, else WAITING) to last
--                           COMPLETE of the task instances of inference k (msprof ended at
--                           the last-starting task's end, which can under-estimate)
--          A task instance belongs to the first step-trace iteration that ends at or after
--          its COMPLETE (as msprof does) when the device has step trace; otherwise to the
--          inference window its start falls in. The window of inference k is its ACL call,
--          else its GE phases (input start to output end), else its iteration. A call or
--          task is in the window that opened last before it started, if it started before
--          that window closed (an ASOF join: linear in the number of calls; when windows
--          overlap, as with concurrent inferences, the later window takes it).
-- Columns:
--   device_id      -     device
--   infer_id       -     1-based inference number ("Infer ID")
--   module_name    -     ACL, GE, Runtime or Task Scheduler ("Module Name")
--   api_name       -     API or phase (aclmdlExecute, Input, Infer, Output); NULL for Runtime and Task Scheduler ("API")
--   start_ns       ns    start on the run timeline ("Start Time")
--   dur_ns         ns    duration ("Duration(ns)")

with model_exec as (
    select
        device_id,
        api_name,
        start_ns,
        end_ns,
        dur_ns,
        seq,
        bool_or(api_name = 'aclmdlExecute') over (partition by device_id) as device_has_mdl
    from stg_api_calls
    where level = 'acl' and api_name in ('aclmdlExecute', 'aclopExecute')
),

acl_exec as (
    select
        device_id,
        api_name,
        start_ns,
        end_ns,
        dur_ns,
        row_number() over (partition by device_id order by start_ns, seq)::integer as infer_id
    from model_exec
    where api_name = case when device_has_mdl then 'aclmdlExecute' else 'aclopExecute' end
),

ge_window as (
    select device_id, infer_id, min(start_ns) as start_ns, max(end_ns) as end_ns
    from stg_model_phases
    group by device_id, infer_id
),

inference_ids as (
    select device_id, infer_id from acl_exec
    union
    select device_id, infer_id from ge_window
    union
    select device_id, iter_id as infer_id from stg_iterations
),

windows as (
    select
        ids.device_id,
        ids.infer_id,
        coalesce(acl_exec.start_ns, ge_window.start_ns, it.start_ns) as win_start_ns,
        coalesce(acl_exec.end_ns, ge_window.end_ns, it.end_ns) as win_end_ns
    from inference_ids as ids
    left join acl_exec on ids.device_id = acl_exec.device_id and ids.infer_id = acl_exec.infer_id
    left join ge_window on ids.device_id = ge_window.device_id and ids.infer_id = ge_window.infer_id
    left join stg_iterations as it on ids.device_id = it.device_id and ids.infer_id = it.iter_id
),

runtime_rows as (
    select
        windows.device_id,
        windows.infer_id,
        min(calls.start_ns) as start_ns,
        max(calls.end_ns) - min(calls.start_ns) as dur_ns
    from (
        select *
        from stg_api_calls
        where level = 'runtime'
            and is_kernel_launch(api_name)
    ) as calls
    asof inner join windows
        on calls.device_id = windows.device_id
        and calls.start_ns >= windows.win_start_ns
    where calls.start_ns <= windows.win_end_ns
    group by windows.device_id, windows.infer_id
),

instances as not materialized (
    -- read by two branches: inlined rather than stored first (pipeline/jobs/transforms.py)
    select
        device_id,
        coalesce(running_ns, pending_ns, waiting_ns) as start_ns,
        complete_ns
    from stg_task_instances
    where is_complete
),

by_iteration as (
    select instances.device_id, it.iter_id as infer_id, instances.start_ns, instances.complete_ns
    from (select * from instances where device_id in (select device_id from stg_iterations)) as instances
    asof inner join stg_iterations as it
        on instances.device_id = it.device_id
        and instances.complete_ns <= it.end_ns
),

by_window as (
    -- devices without iterations only, chosen before the join, as by_iteration's are
    -- (pipeline/jobs/transforms.py: filter before an ASOF join)
    select windows.device_id, windows.infer_id, instances.start_ns, instances.complete_ns
    from (
        select * from instances where device_id not in (select device_id from stg_iterations)
    ) as instances
    asof inner join windows
        on instances.device_id = windows.device_id
        and instances.start_ns >= windows.win_start_ns
    where instances.start_ns <= windows.win_end_ns
),

task_rows as (
    select
        device_id,
        infer_id,
        min(start_ns) as start_ns,
        max(complete_ns) - min(start_ns) as dur_ns
    from (
        select * from by_iteration
        union all
        select * from by_window
    )
    group by device_id, infer_id
),

all_rows as (
    select device_id, infer_id, 1 as module_order, 'ACL' as module_name, api_name, start_ns, dur_ns
    from acl_exec
    union all
    select
        device_id,
        infer_id,
        case phase when 'input' then 2 when 'infer' then 3 else 4 end,
        'GE',
        case phase when 'input' then 'Input' when 'infer' then 'Infer' else 'Output' end,
        start_ns,
        dur_ns
    from stg_model_phases
    union all
    select device_id, infer_id, 5, 'Runtime', null, start_ns, dur_ns
    from runtime_rows
    union all
    select device_id, infer_id, 6, 'Task Scheduler', null, start_ns, dur_ns
    from task_rows
)

select device_id, infer_id, module_name, api_name, start_ns, dur_ns
from all_rows
order by device_id, infer_id, module_order
