"""How many CPU devices JAX gets for NUTS's parallel chains (`jax_setup.set_host_devices`), and that the
count does not change the draws."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest
import xarray as xr

from bayes_wsc import jax_setup


def test_the_chains_get_twice_their_number_of_devices(monkeypatch):
    """4 chains on a 2-core machine: 8 devices (4 devices, all busy, let XLA's runtime grow while they sampled),
    the user's other XLA flags kept; never fewer devices than usable CPUs."""
    from jax._src import xla_bridge

    monkeypatch.setattr(xla_bridge, "backends_are_initialized", lambda: False)
    monkeypatch.setattr(jax_setup, "usable_cpus", lambda: 2)
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_enable_fast_math=false --xla_force_host_platform_device_count=100")
    jax_setup.set_host_devices(4)
    assert jax_setup.os.environ["XLA_FLAGS"] == ("--xla_cpu_enable_fast_math=false "
                                                 "--xla_force_host_platform_device_count=8")
    monkeypatch.setattr(jax_setup, "usable_cpus", lambda: 16)
    jax_setup.set_host_devices(4)
    assert jax_setup.os.environ["XLA_FLAGS"].endswith("--xla_force_host_platform_device_count=16")


FIT = textwrap.dedent("""
    import sys
    from bayes_wsc import jax_setup
    devices = int(sys.argv[1])
    chosen = jax_setup.set_host_devices
    jax_setup.set_host_devices = lambda n: chosen(devices // 2)  # twice its argument: `devices` devices
    jax_setup.usable_cpus = lambda: 1  # on any machine
    from bayes_wsc.estimator import load  # noqa: F401 (the package as a user's process has it)
    from bayes_wsc.models.wsc import WSC
    from bayes_wsc.simulate import simulate_wsc
    import jax
    data = simulate_wsc(n_groups=30, items_per_group=20, n_bins=4, seed=8)[0]
    est = WSC(method="nuts", chains=4, tune=60, draws=40, seed=3, progressbar=False).fit(data)
    assert jax.local_device_count() == devices, jax.local_device_count()
    est.save(sys.argv[2])
""")


@pytest.mark.slow
def test_the_draws_do_not_depend_on_the_number_of_devices(tmp_path):
    """The same seed's 4 chains on 4 devices and on 8: bit for bit the same draws."""
    paths = []
    for devices in (4, 8):
        path = tmp_path / f"fit{devices}.nc"
        subprocess.run([sys.executable, "-c", FIT, str(devices), str(path)], check=True, timeout=600)
        paths.append(path)
    first, second = (xr.open_dataset(p, group="posterior") for p in paths)
    for name in first.data_vars:
        np.testing.assert_array_equal(first[name].values, second[name].values)
