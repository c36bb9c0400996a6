"""One check for every model's save -> load: nothing lost."""

import numpy as np
import pandas as pd

from bayes_wsc import inference
from bayes_wsc.estimator import load


def assert_lossless_round_trip(est, items, path):
    """Save `est`, load it back: same class and settings, same predictions on `items`, every
    group, variable, value and attribute kept, no temporary file left beside `path`."""
    est.save(path)
    back = load(path)
    assert type(back) is type(est) and back.get_params() == est.get_params()
    pd.testing.assert_frame_equal(est.predict(items), back.predict(items))
    assert set(inference.group_names(est.idata_)) == set(inference.group_names(back.idata_))
    for group in inference.group_names(est.idata_):
        a, b = est.idata_[group], back.idata_[group]
        assert set(a.data_vars) == set(b.data_vars)
        for name in a.data_vars:
            np.testing.assert_array_equal(a[name].values, b[name].values)
    assert inference.get_attrs(est.idata_) == inference.get_attrs(back.idata_)
    assert sorted(p.name for p in path.parent.iterdir() if p.name.startswith(".") or p.suffix == ".tmp") == []
    return back
