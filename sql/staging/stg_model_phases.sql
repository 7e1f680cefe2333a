-- stg_model_phases: one row per phase (input, infer, output) of one inference, as GE reported it.
--
-- Grain:   (device_id, infer_id, phase)
-- Sources: inferences (phases input, infer, output; model loads are left out)
-- Follows: msprof 2022 top_down_report: the i-th GeModelTime row is inference i
--          (analysis-and-exports §A5.1); the reader numbered rows in file order.
-- Columns:
--   device_id      -     device
--   infer_id       -     1-based inference number
--   model_id       -     model id
--   model_name     -     model name
--   phase          -     input, infer or output
--   start_ns       ns    phase start
--   end_ns         ns    phase end
--   dur_ns         ns    end_ns - start_ns

select
    device_id,
    infer_id,
    model_id,
    model_name,
    phase,
    start_ns,
    end_ns,
    end_ns - start_ns as dur_ns
from inferences
where phase in ('input', 'infer', 'output')
