"""float32 NUTS, the wsc model's default: a log density small enough to sum, and the same posterior."""

import warnings

import numpy as np
import pytest

from bayes_wsc import inference
from bayes_wsc.errors import FitWarning, InputError
from bayes_wsc.fit import fit_nuts, jax_runtime
from bayes_wsc.models.wsc import WSC, build_model
from bayes_wsc.simulate import simulate_wsc


def log_density_in(model, points, x64: bool) -> np.ndarray:
    from pymc.sampling.jax import get_jaxified_graph

    jax = jax_runtime(2)
    logp = get_jaxified_graph(inputs=model.value_vars, outputs=[model.logp()])
    with jax.enable_x64(x64), warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # float64 constants given as float32
        dtype = np.float64 if x64 else np.float32
        f = jax.jit(lambda xs: logp(*xs)[0])
        return np.array([float(f([np.asarray(p[v.name], dtype=dtype) for v in model.value_vars]))
                         for p in points])


def test_centred_click_term_loses_little_to_float32():
    """Uncentred, the click term of 1000 groups x 100 clicks is about -3.5e5 nats, and float32
    rounded the log density by up to 0.03 nats (0.3 at 10,000 groups); centred, by under 0.01
    (0.06), what is left coming from the float32 emission probabilities themselves."""
    data, _ = simulate_wsc(n_groups=1000, items_per_group=100, n_bins=30, seed=1)
    model = build_model(data)
    rng = np.random.default_rng(0)
    start = model.initial_point()
    points = [{k: v + 0.1 * rng.standard_normal(np.shape(v)) for k, v in start.items()} for _ in range(10)]
    exact = log_density_in(model, points, x64=True)
    rounded = log_density_in(model, points, x64=False)
    assert np.max(np.abs(exact)) < 5e4  # of the order of what the groups tell apart, not of the clicks
    assert np.max(np.abs(rounded - exact)) < 0.015


@pytest.mark.slow
def test_float32_and_float64_nuts_give_the_same_posterior():
    data, _ = simulate_wsc(n_groups=100, items_per_group=50, n_bins=6, sigma_h=0.5, seed=4)
    fits = {}
    for precision in ("float32", "float64"):
        est = WSC(wh=4.0, method="nuts", draws=500, tune=500, chains=2, seed=3, progressbar=False,
                  precision=precision if precision == "float64" else None)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FitWarning)
            est.fit(data)
        assert inference.get_attrs(est.idata_)["fit_info"]["nuts"]["precision"] == precision
        assert est.idata_.posterior["rho"].dtype == np.float64
        fits[precision] = est.summary().loc[[f"rho[{b}]" for b in est.idata_.posterior["bin"].values]]
    a, b = fits["float32"], fits["float64"]
    z = (a["mean"] - b["mean"]) / np.sqrt(a["mcse_mean"] ** 2 + b["mcse_mean"] ** 2)
    assert np.all(np.abs(z) < 4), z.round(2).to_dict()
    np.testing.assert_allclose(a["sd"], b["sd"], rtol=0.2)


def test_precision_is_checked():
    with pytest.raises(InputError, match="precision must be None or one of"):
        WSC(method="nuts", precision="float16").fit(simulate_wsc(n_groups=5, items_per_group=5, n_bins=2)[0])
    model = build_model(simulate_wsc(n_groups=5, items_per_group=5, n_bins=2)[0])
    with pytest.raises(InputError, match="precision 'float32' needs the numpyro backend"):
        fit_nuts(model, backend="pymc", precision="float32")
    est = WSC(method="nuts", backend="pymc", precision="float32")
    with pytest.raises(InputError, match="precision 'float32' needs the numpyro backend"):
        est.check_params()  # what fit runs first, before the MAP start


def test_float32_nuts_with_its_progress_bar():
    """The progress bar's host callbacks run in another thread: float32 must reach it too (the
    thread-local `jax.enable_x64(False)` did not, and XLA aborted on an int64 step count)."""
    data, _ = simulate_wsc(n_groups=10, items_per_group=10, n_bins=3, seed=2)
    est = WSC(method="nuts", draws=20, tune=20, chains=2, seed=1, progressbar=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        est.fit(data)
    assert inference.get_attrs(est.idata_)["fit_info"]["nuts"]["precision"] == "float32"
    import jax

    assert jax.config.jax_enable_x64  # restored for PyTensor's float64 graphs
