"""Start/end logs paired as one whole stream: the reader's chunked ``Pairer`` fed everything at once."""

from __future__ import annotations

import numpy as np

from pipeline.readers.prof.pairing import Logs, Pairer, Runs


def pair_whole(logs: Logs, by_time: bool) -> Runs:
    """Executions of all ``logs``; ``orphan_starts`` holds every start no end closed."""
    pairer = Pairer(by_time)
    runs = pairer.feed(logs)
    runs.orphan_starts = np.sort(np.concatenate([runs.orphan_starts, pairer.finish()]))
    return runs
