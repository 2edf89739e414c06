"""``AdviseOptions``: the options of ``advise`` as one frozen dataclass, the keyword form a thin wrapper over it."""
import json

import pytest

import advisor
from advisor import AdviseOptions
from instrumentation.records import AccessRecord, DatasetRecord, Selection

from test_search import make_trace, profile


def _trace():
    ds = DatasetRecord(0, "hdf5", "2", "/nowhere/o.h5", "/x", (4000, 64), "float32", chunks=(100, 64))
    reads = [AccessRecord(0, "read", Selection.box((0, j), (4000, 4)), 16000, 64000, 0.01 * k, 0.002)
             for k, j in enumerate(range(0, 64, 4))]
    return make_trace(ds, reads)


def test_options_round_trip_through_json():
    o = AdviseOptions(dataset="/x", objective="size", max_seconds=2.0, max_error="rel:1e-3",
                      compressors=("zstd", "sz3"), libraries=("zarr",), top=3, cache_budget=None)
    back = AdviseOptions.from_config(json.loads(json.dumps(o.get_config())))
    assert back == o
    assert AdviseOptions.from_config(AdviseOptions().get_config()) == AdviseOptions()
    with pytest.raises(ValueError, match="unknown advise option"):
        AdviseOptions.from_config({"tpo": 3})


def test_options_and_keywords_give_the_same_advice():
    trace, prof = _trace(), profile()
    by_kw = advisor.advise(trace, profile=prof, read_data=False, jobs=1, top=2, libraries=["hdf5"])
    by_opts = advisor.advise(trace, AdviseOptions(read_data=False, jobs=1, top=2, libraries=("hdf5",)), profile=prof)
    strip = lambda a: {**a.to_json_obj(), "seconds": None}  # noqa: E731 - the advisor's own run time differs
    assert strip(by_kw) == strip(by_opts)
    with pytest.raises(TypeError, match="not both"):
        advisor.advise(trace, AdviseOptions(), top=2)
    with pytest.raises(TypeError):
        advisor.advise(trace, tpo=2)
