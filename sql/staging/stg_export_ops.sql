-- stg_export_ops: one row per device task execution of an exported run, with the operator it ran.
--
-- Grain:   (device_id, stream_id, task_id, start_ns, seq)
-- Sources: task_runs (executions of exported runs: database TASK, timeline Ascend Hardware
--          events or summary CSV rows), task_ops (exported operator descriptions)
-- Follows: msprof's op_summary / kernel_details rows (analysis-and-exports §A6.4): the
--          exporter already associated each execution with its operator, so the description
--          is joined exactly on (device, stream, task, start): the readers write each exported
--          operator row with the start of the execution it describes. An execution no
--          description names (event records, notify waits, SDMA copies of a timeline) keeps
--          a NULL op; a description no execution has is counted in build_issues.
-- Columns:
--   device_id          -       device
--   stream_id          -       stream id
--   task_id            -       task id
--   context_id         -       FFTS+ context id; NULL when none
--   model_id           -       model id as exported (4294967295 = no model)
--   batch_id           -       batch id where the export has one
--   start_ns           ns      execution start (exported wall-clock time)
--   end_ns             ns      execution end
--   dur_ns             ns      end_ns - start_ns
--   task_type          -       task type: the operator's where described, else the execution's
--   accelerator_core   -       core the operator ran on (AI_CORE, AI_VECTOR_CORE, MIX_AIC, ...)
--   op_name            -       operator (kernel) name; NULL when no description names it
--   op_type            -       operator type
--   op_state           -       dynamic or static where exported
--   block_dim          blocks  blocks the operator ran
--   mix_block_dim      blocks  blocks of the second core type of a MIX operator
--   input_shapes       -       input shapes as exported
--   input_data_types   -       input data types
--   input_formats      -       input formats
--   output_shapes      -       output shapes
--   output_data_types  -       output data types
--   output_formats     -       output formats
--   connection_id      -       exporter's link from the execution to the host API that launched it
--   has_op             -       true when a description names the execution
--   seq                -       the execution's row index in its source
--   source             -       where the execution came from (db_task, timeline, kernel_details, ...)

with runs as (
    select *
    from task_runs
    where source in ('db_task', 'timeline', 'kernel_details', 'op_summary', 'task_time_csv')
),

ops as (
    select *
    from task_ops
    where source = 'export'
    qualify row_number() over (
        partition by device_id, stream_id, task_id, start_ns, coalesce(context_id, -1) order by seq
    ) = 1
)

select
    runs.device_id,
    runs.stream_id,
    runs.task_id,
    coalesce(runs.context_id, ops.context_id) as context_id,
    coalesce(runs.model_id, ops.model_id) as model_id,
    runs.batch_id,
    runs.start_ns,
    runs.end_ns,
    runs.end_ns - runs.start_ns as dur_ns,
    coalesce(ops.task_type, runs.task_type_name) as task_type,
    ops.accelerator_core,
    ops.op_name,
    ops.op_type,
    ops.op_state,
    ops.block_dim,
    ops.mix_block_dim,
    ops.input_shapes,
    ops.input_data_types,
    ops.input_formats,
    ops.output_shapes,
    ops.output_data_types,
    ops.output_formats,
    runs.connection_id,
    ops.seq is not null as has_op,
    runs.seq,
    runs.source
from runs
left join ops
    on runs.device_id = ops.device_id
    and runs.stream_id = ops.stream_id
    and runs.task_id = ops.task_id
    and runs.start_ns = ops.start_ns
    and coalesce(runs.context_id, -1) = coalesce(ops.context_id, -1)
