"""A fit written on one dependency family loads on the other and gives the numbers its writer computed:
tests/data holds a small fit of each family (tests/data/write_stack_fit.py wrote them) with the summary,
class probabilities and PSIS-LOO that family computed from it."""

import importlib.util
import json
import warnings
from importlib.metadata import version
from pathlib import Path

import numpy as np
import pytest

import bayes_wsc
from bayes_wsc import inference

DATA = Path(__file__).resolve().parent / "data"
WRITER = importlib.util.spec_from_file_location("write_stack_fit", DATA / "write_stack_fit.py")
write_stack_fit = importlib.util.module_from_spec(WRITER)
WRITER.loader.exec_module(write_stack_fit)


@pytest.mark.parametrize("family", ["pymc5", "pymc6"])
def test_a_fit_of_either_family_reads_the_same_here(family):
    expected = json.loads((DATA / f"fit-{family}.json").read_text())
    est = bayes_wsc.load(DATA / f"fit-{family}.nc")
    ours = write_stack_fit.computed(est)
    assert ours["summary_columns"] == expected["summary_columns"]
    assert ours["summary"].keys() == expected["summary"].keys()
    for row, values in expected["summary"].items():
        np.testing.assert_allclose(ours["summary"][row], values, rtol=1e-9, err_msg=row)
    for name, values in expected["class_probability"].items():
        np.testing.assert_allclose(ours["class_probability"][name], values, rtol=1e-9, err_msg=name)
    # PSIS-LOO is ArviZ's own on each family: the same estimate and p_loo; the standard error is sqrt(n var)
    # of the pointwise values, with the variance's ddof 0 on ArviZ 0.2x and 1 on ArviZ 1 (as R's loo)
    for field in ("elpd", "p"):
        np.testing.assert_allclose(ours["loo"][field], expected["loo"][field], rtol=1e-6, err_msg=field)
    units = est.idata_.log_likelihood["groups"].sizes["group"]
    ddof = {True: 1, False: 0}
    ratio = np.sqrt((units - ddof[expected["stack"]["arviz"] >= "1"]) / (units - ddof[inference.arviz_1()]))
    np.testing.assert_allclose(ours["loo"]["se"], expected["loo"]["se"] * ratio, rtol=1e-6)


def test_a_fit_written_here_reads_back_alike(tmp_path):
    """This family writes a fit that it reads back with the same figures (the other family's reading of
    such a file is the test above, on the file this family wrote into tests/data)."""
    est = bayes_wsc.load(DATA / f"fit-pymc{version('pymc').split('.')[0]}.nc")
    est.save(tmp_path / "again.nc")
    back = bayes_wsc.load(tmp_path / "again.nc")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert write_stack_fit.computed(back) == write_stack_fit.computed(est)
