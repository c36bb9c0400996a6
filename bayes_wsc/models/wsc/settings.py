"""The wsc model's settings, declared once (`bayes_wsc.settings`): `WSC`'s keywords, their checks and the
plain options of `bayes-wsc fit wsc`."""

from __future__ import annotations

from dataclasses import dataclass

from bayes_wsc.settings import POSITIVE, one_of, or_none, real, setting

MU_PRIORS = ("hierarchical", "flat")
#: how NUTS treats the group qualities: as parameters, or integrated out of the model's density and
#: drawn from their conditionals after sampling (`add_integrated_clicks`), by quadrature per group or
#: on one grid of nodes shared by all groups
MU_METHODS = ("sampled", "integrated", "grid")


def wh_value(name: str, value) -> float:
    """WH: a number >= 0 or inf, kept as given, or text that reads as one, kept as a float."""
    number = real(name, value, infinite=True)
    return number if isinstance(value, str) else value


@dataclass(frozen=True)
class WSCSettings:
    """wh : 1 / sigma_H^2 (`--wh` is written by hand in the command: it reads "inf"); mu_prior : F0;
    w_concentration : the emissions' Dirichlet c; mu : how NUTS treats the group qualities (None: chosen by
    `WSC.mu_used`). `WSC.build_settings` gives `build_model` the WH used, and `mu` only when not "sampled"."""

    wh: float = setting(10.0, parse=wh_value)
    mu_prior: str = setting("hierarchical", one_of(MU_PRIORS), help="")
    w_concentration: float = setting(1.0, POSITIVE, as_built=float, help="Dirichlet c of w0, w1")
    mu: str | None = setting(None, or_none(one_of(MU_METHODS), said=False), build=False, help=(
        "NUTS or laplace: treat every group's mu as a parameter, or integrate them out and draw them afterwards "
        "(grid: NUTS only, on one grid of nodes shared by all groups, the heaviest by per-group quadrature) "
        "(default: grid for --method nuts, integrated for --method laplace or for nuts with a --model file that "
        "takes mu, sampled otherwise)"))
