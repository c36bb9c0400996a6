"""`graph_inputs.declare`, the one way a block declares its data (values, dims, reuse)."""

import numpy as np
import pytest

from bayes_wsc.graph_inputs import declare


def test_declare_gives_pm_data_with_dims_and_reuses_a_name_declared_with_the_same_values():
    import pymc as pm

    with pm.Model(coords={"item": ["a", "b"]}) as model:
        first = declare({"x": np.array([1.0, 2.0]), "n": np.array(3)}, {"x": "item"})
        assert model.named_vars_to_dims["x"] == ("item",) and "n" not in model.named_vars_to_dims
        np.testing.assert_array_equal(first["x"].get_value(), [1.0, 2.0])
        again = declare({"x": np.array([1.0, 2.0]), "y": np.array([0.0])}, only=["x"])
        assert again["x"] is first["x"] and "y" not in model.named_vars
        with pytest.raises(ValueError, match="already holds data 'x' with other values"):
            declare({"x": np.array([1.0, 5.0])})
        pm.Normal("z", 0.0, 1.0)
        with pytest.raises(ValueError, match="a variable 'z' that is not data"):
            declare({"z": np.array(0.0)})


def test_every_model_declares_exactly_its_model_data():
    """The values a cached program runs on are the ones the graph declares, for the five models."""
    from bayes_wsc.data.pairwise import PairwiseConstraints
    from bayes_wsc.data.proportions import LabelProportions
    from bayes_wsc.models import experts, pcmix, perception, proportions, wsc
    from bayes_wsc.simulate import simulate_two_blobs, simulate_wsc, toy_items
    from bayes_wsc.simulate.experts import simulate_experts_model
    from bayes_wsc.simulate.perception import simulate_study

    grouped = simulate_wsc(n_groups=6, items_per_group=10, n_bins=3, seed=0)[0]
    items, constraints, _ = simulate_experts_model(n_items=12, n_features=2, n_clusters=2, alpha=(0.9, 0.8),
                                                   beta=(0.85, 0.7), pairs_per_expert=20, separation=3.0, seed=0)
    pairs = PairwiseConstraints.from_frames(items, constraints)
    labeled = toy_items(simulate_two_blobs(n=20, labeled_fraction=0.5, band=0.7, seed=0)[0])
    rng = np.random.default_rng(0)
    shares = LabelProportions.from_arrays(rng.normal(size=(12, 2)), np.repeat(np.arange(4), 3),
                                          np.tile([[1 / 3, 2 / 3]], (4, 1)))
    seeds = simulate_study(n_items=40, seed=0).data()
    cases = [(wsc.build_model(grouped), wsc.model_data(grouped)),
             (experts.build_model(pairs), experts.model_data(pairs)),
             (pcmix.build_model(labeled), pcmix.model_data(labeled, 1.0)),
             (proportions.build_model(shares), proportions.model_data(shares)),
             (perception.build_model(seeds), perception.model_data(seeds))]
    for model, values in cases:
        declared = {v.name: v.get_value() for v in model.data_vars}
        assert declared.keys() == values.keys()
        for name, value in values.items():
            np.testing.assert_array_equal(declared[name], value)
