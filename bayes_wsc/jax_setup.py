"""JAX as the package runs it: float64, one CPU device per chain, compiled programs cached on disk.

Free of PyMC: a MAP whose compiled program is cached (`map_program`) runs
on JAX alone.
"""

from __future__ import annotations

import os
import re


def cache_home() -> str:
    """The user's cache folder (XDG_CACHE_HOME, else ~/.cache), where this package, ArviZ and
    Matplotlib keep theirs."""
    return os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")


def cache_root() -> str:
    """The package's folder under the user's cache."""
    return os.path.join(cache_home(), "bayes_wsc")


def unwritable_cache() -> str | None:
    """Why the user's cache folder (or the package's folder in it, when there is one) cannot take
    a new file, tried, or None when it can. ArviZ fails to import without it."""
    import tempfile

    for folder in (cache_home(), cache_root()):
        if folder == cache_root() and not os.path.isdir(folder):
            continue
        try:
            os.makedirs(folder, exist_ok=True)
            fd, probe = tempfile.mkstemp(prefix=".probe.", dir=folder)
            os.close(fd)
            os.unlink(probe)
        except OSError as exc:
            return f"the cache folder {folder!r} cannot be written ({exc.strerror or exc})"
    return None


def usable_cpus() -> int:
    """CPUs this process may run on (os.cpu_count() reports the host's, not the container's)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def set_host_devices(n: int) -> None:
    """Give JAX a CPU device per chain so that chains run in parallel, and as many again.

    XLA reads the device count when its backend starts, so this only works
    before the first JAX computation. It must also come after importing
    `pymc.sampling.jax`, which sets the count to 100 on import: with 100
    devices on a 2-core machine every chain fights for the cores.

    Twice the chains: when NumPyro's parallel chains filled every device of a 2-core machine
    (4 chains, 4 devices), XLA's runtime grew by 10-22 MB a second while they sampled (a long
    fit held 5-9 GB); with 8 devices it stayed flat, the draws bit for bit the same
    (`benchmarks/nuts_memory.py`, RESULTS.md).
    """
    from jax._src import xla_bridge

    if xla_bridge.backends_are_initialized():
        return
    flags = re.sub(r"--xla_force_host_platform_device_count=\S+", "", os.environ.get("XLA_FLAGS", ""))
    wanted = max(2 * n, usable_cpus())
    os.environ["XLA_FLAGS"] = f"{flags.strip()} --xla_force_host_platform_device_count={wanted}".strip()


def jax_runtime(devices: int = 4):
    """JAX in float64 (PyTensor's JAX linker), with at least `devices` CPU devices (one per chain;
    4 is PyMC's default chain count, so a MAP that runs first leaves room for the chains) and the
    persistent compilation cache. Callers that use PyMC's JAX code import `pymc.sampling.jax`
    first (see `set_host_devices`)."""
    set_host_devices(devices)
    import jax

    jax.config.update("jax_enable_x64", True)
    _use_compilation_cache(jax)
    return jax


def _use_compilation_cache(jax) -> None:
    """Keep XLA's compiled programs on disk, so that a second fit of the same shape starts at once.

    JAX writes only programs that took a second or more to compile; the MAP's value and gradient
    at 10,000 groups take 0.8 s, paid again by every fit and every process, so all are kept. Each
    data set is a new program (the data are constants in it), so the least recently used are
    deleted beyond 1 GB (JAX's LRU cache; unbounded by default).
    """
    if jax.config.jax_compilation_cache_dir:
        return  # the user chose
    folder = os.path.join(cache_root(), "jax")
    _date_undated_entries(folder)
    jax.config.update("jax_compilation_cache_dir", folder)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_compilation_cache_max_size", 2**30)


def _date_undated_entries(folder: str) -> None:
    """Give every cached program the last-use file that JAX's bounded cache expects.

    With a size bound, JAX reads `<key>-atime` of every `<key>-cache` before each write, and one
    missing file fails every write ("Error writing persistent compilation cache entry", a
    warning per compilation, nothing cached). Entries written before the bound was set, or by a
    process killed between its two writes, have none. They are dated now: kept, and evicted in
    turn like the rest.
    """
    try:
        names = set(os.listdir(folder))
    except OSError:
        return
    stamp = None
    for name in names:
        if name.endswith("-cache") and f"{name[:-6]}-atime" not in names:
            import time

            stamp = stamp or time.time_ns().to_bytes(8, "little")
            try:
                with open(os.path.join(folder, f"{name[:-6]}-atime"), "wb") as f:
                    f.write(stamp)
            except OSError:
                return
