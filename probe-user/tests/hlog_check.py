"""Decodes an HdrHistogram interval log with the PyPI `hdrhistogram`
package (HdrHistogram's Python port) and prints, per tag, what it reads:
the whole-run histogram's count, p50, p90, p99, max, and the sum of the
per-interval counts. Used by vmtrace's tests to check the hlog export
against vmtrace's own figures. Usage: hlog_check.py FILE.hlog"""

import json
import sys

from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogReader


def main(path):
    # The reference histogram sets the decoder's range: vmtrace's
    # (1 ns .. 2^62 ns, 2 significant digits).
    ref = HdrHistogram(1, 1 << 62, 2)
    reader = HistogramLogReader(path, ref)
    out = {}
    while True:
        h = reader.get_next_interval_histogram()
        if h is None:
            break
        tag = h.get_tag()
        if tag.endswith(".whole_run"):
            out.setdefault(tag[: -len(".whole_run")], {})["whole_run"] = {
                "count": h.get_total_count(),
                "p50": h.get_value_at_percentile(50),
                "p90": h.get_value_at_percentile(90),
                "p99": h.get_value_at_percentile(99),
                "max": h.get_max_value(),
            }
        else:
            e = out.setdefault(tag, {})
            e["interval_count"] = e.get("interval_count", 0) + h.get_total_count()
            e["intervals"] = e.get("intervals", 0) + 1
    json.dump(out, sys.stdout, sort_keys=True)


if __name__ == "__main__":
    main(sys.argv[1])
