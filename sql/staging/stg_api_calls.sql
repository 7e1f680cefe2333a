-- stg_api_calls: one row per host API call, with its duration and AscendCL type name.
--
-- Grain:   (device_id, level, source_file, seq)
-- Sources: api_calls
-- Stored:  no, a view: a projection of api_calls, cheaper to compute than to store
--          (pipeline/jobs/transforms.py)
-- Follows: AscendCL type names of msprof's AclApiTag (docs/formats.md#api-event); a duration is
--          exit - entry of the same record (docs/formats.md#rule-api-duration).
-- Columns:
--   device_id      -     device the call's file belongs to
--   level          -     acl or runtime
--   api_name       -     API name
--   api_type       -     AscendCL tag name (ACL_OP, ACL_MODEL, ACL_RTS, ACL_OTHERS, ...); NULL for every level
--                         but acl, and for calls from an exported database (CANN_API keeps the level, not the tag)
--   pid            -     process id; NULL where the record has none
--   tid            -     thread id
--   stream_id      -     stream id; NULL for calls outside any stream
--   start_ns       ns    entry on the run timeline
--   end_ns         ns    exit on the run timeline
--   dur_ns         ns    end_ns - start_ns
--   seq            -     record index within its stream of slices

with acl_tags (tag, tag_name) as (
    values
        (1, 'ACL_OP'), (2, 'ACL_MODEL'), (3, 'ACL_RTS'), (4, 'ACL_OTHERS'), (5, 'ACL_NN'),
        (6, 'ACL_ASCENDC'), (7, 'HOST_HCCL'), (9, 'ACL_DVPP'), (10, 'ACL_GRAPH'), (11, 'ACL_ATB')
)

select
    calls.device_id,
    calls.level,
    calls.api_name,
    case
        -- parenthesised: sqlfluff's DuckDB grammar ends a select list at the `from` of a bare `is distinct from`
        when (calls.level = 'acl' and calls.record_kind is distinct from 'db_cann_api')
            then coalesce(acl_tags.tag_name, 'unknown ' || calls.api_type::varchar)
    end as api_type,
    calls.pid,
    calls.tid,
    calls.stream_id,
    calls.start_ns,
    calls.end_ns,
    calls.end_ns - calls.start_ns as dur_ns,
    calls.seq
from api_calls as calls
left join acl_tags on calls.api_type = acl_tags.tag
