"""Simulation-based calibration of the WSC model (seed 000): `sbc.py --model wsc`, kept for its
command line and file names.

Every simulation draws (mu_loc, mu_scale, mu, w0, w1) and HE ~ N(mu, 1/sqrt(WH))
from the model's own prior, simulates J clicks per group given them, fits by
NUTS through `WSC.fit` (MAP start included) and ranks the truth of every
rho(k), pi, mu_loc, mu_scale, three mu[i], w0[0] and w1[0] among 99 draws
thinned from the chains.

    python benchmarks/sbc_wsc.py --sims 100 --groups 40 --items 20 --bins 5

is `python benchmarks/sbc.py --model wsc ...` (here `--model FILE` is a
variant file from models/, `--variant FILE` there). Writes
benchmarks/out/sbc_wsc[_<tag>]_{ranks,uniformity}.csv, the rank
histograms and ECDF plots as PNG and an HTML report (git-ignored), and the
uniformity table to benchmarks/results/ (committed); every finished
simulation is appended to the ranks CSV at once (`--resume` continues).
Exit status 1 when some quantity fails the Bonferroni chi-square test.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import sbc  # noqa: E402  (benchmarks/sbc.py)


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    translated = []
    for arg in argv:  # this script's --model is a variant file
        if arg == "--model":
            translated.append("--variant")
        elif arg.startswith("--model="):
            translated.append("--variant=" + arg.split("=", 1)[1])
        else:
            translated.append(arg)
    return sbc.main(["--model", "wsc", *translated], program="benchmarks/sbc_wsc.py", prefix="sbc_wsc")


if __name__ == "__main__":
    sys.exit(main())
