-- stg_model_phases: one row per phase (input, infer, output) of one inference, as GE reported it.
--
-- Grain:   (device_id, infer_id, phase)
-- Sources: inferences (phases input, infer, output; model loads are left out), api_calls
--          (model-level records of generations 2 and 3)
-- Follows: msprof 2022 top_down_report: the i-th GeModelTime row is inference i
--          (docs/formats.md#rule-topdown); the reader numbered rows in file order.
--          Generations 2 and 3 have no GeModelTime record; their model-level API records
--          InputCopy (type 3), ModelExecute (1) and OutputCopy (4) (docs/formats.md#levels) are
--          the input, infer and output phases, and the k-th of each kind on a device (by
--          start time) belongs to inference k, as msprof numbered GE rows (a derivation:
--          msprof has no top-down table for these chips). The model name comes from the
--          graph id map of the model id.
-- Columns:
--   device_id      -     device
--   infer_id       -     1-based inference number
--   model_id       -     model id
--   model_name     -     model name
--   phase          -     input, infer or output
--   start_ns       ns    phase start
--   end_ns         ns    phase end
--   dur_ns         ns    end_ns - start_ns

with ge_phases as (
    select device_id, infer_id, model_id, model_name, phase, start_ns, end_ns
    from inferences
    where phase in ('input', 'infer', 'output')
),

model_apis as (
    select
        device_id,
        case api_name when 'InputCopy' then 'input' when 'ModelExecute' then 'infer' else 'output' end
            as phase,
        try_cast(item as bigint) as model_id,
        start_ns,
        end_ns,
        seq
    from api_calls
    where level = 'model' and api_name in ('InputCopy', 'ModelExecute', 'OutputCopy')
),

model_names as (
    select model_id, min(model_name) as model_name
    from inferences
    where phase = 'graph_id_map'
    group by model_id
),

api_phases as (
    select
        model_apis.device_id,
        row_number() over (
            partition by model_apis.device_id, model_apis.phase order by model_apis.start_ns, model_apis.seq
        )::integer as infer_id,
        model_apis.model_id,
        model_names.model_name,
        model_apis.phase,
        model_apis.start_ns,
        model_apis.end_ns
    from model_apis
    left join model_names on model_apis.model_id = model_names.model_id
)

select
    device_id,
    infer_id,
    model_id,
    model_name,
    phase,
    start_ns,
    end_ns,
    end_ns - start_ns as dur_ns
from (
    select * from ge_phases
    union all
    select * from api_phases
)
