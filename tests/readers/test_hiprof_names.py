"""AscendCL API names that are hash ids resolve through AclModule.hash_dic (docs/formats.md#acl-record)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from pipeline.layouts import hiprof as hiprof_layouts
from pipeline.readers.decode import Batch
from pipeline.readers.hiprof.host import acl_calls
from pipeline.readers.issues import IssueLog


class _OneFile:
    files: list = []

    def source_files(self, offsets):
        return pa.array(["data/AclModule.acl_rts.0.slice_0"] * len(offsets))


def test_hashed_acl_names_resolve_and_the_rest_stay():
    rec = hiprof_layouts.ACL_API.zeros(4)
    rec["api_name"] = [b"123", b"aclmdlExecute", b"999", b"123"]
    batch = Batch(rec, np.arange(4) * hiprof_layouts.ACL_API.size, np.arange(4))
    cols = acl_calls(batch, _OneFile(), 0, {123: "aclrtMalloc"}, IssueLog())
    # 123 is in the dictionary; 999 is not and is kept as written
    assert cols["api_name"].to_pylist() == ["aclrtMalloc", "aclmdlExecute", "999", "aclrtMalloc"]
