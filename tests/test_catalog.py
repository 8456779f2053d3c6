"""The model catalog: shapes, published weight sizes, user tables and their validation."""
from __future__ import annotations

import pytest

from dse.catalog import _validate_table, catalog, get_model
from dse.errors import ConfigError


def test_reference_models_present_with_published_sizes():
    names = set(catalog())
    assert {"qwen3.5-35b-a3b", "qwen3.5-397b-a17b", "glm-5.2"} <= names
    assert len(names) >= 6  # plus at least three public models
    m = get_model("qwen3.5-35b-a3b")
    assert m.expert_bytes == 3 * 2048 * 512 and m.native_batch == 128


def test_public_models_real_shapes():
    mx = get_model("mixtral-8x7b")
    assert (mx.experts, mx.top_k, mx.moe_layers, mx.hidden, mx.expert_intermediate) == (8, 2, 32, 4096, 14336)
    ds = get_model("deepseek-v3")
    assert (ds.experts, ds.top_k, ds.moe_layers, ds.hidden, ds.expert_intermediate, ds.shared_experts) == \
        (256, 8, 58, 7168, 2048, 1)


@pytest.mark.parametrize("table,needle", [
    ({"name": "x", "experts": 8, "top_k": 2, "moe_layers": 2, "hidden": 64}, "expert_intermediate: missing"),
    ({"name": "x", "experts": 8, "top_k": 9, "moe_layers": 2, "hidden": 64, "expert_intermediate": 64},
     "top_k = 9: must be <= experts"),
    ({"name": "x", "experts": "8", "top_k": 2, "moe_layers": 2, "hidden": 64, "expert_intermediate": 64},
     "experts = '8': must be of type int"),
    ({"name": "x", "experts": 8, "top_k": 2, "moe_layers": 2, "hidden": 64, "expert_intermediate": 64,
      "colour": 1}, "colour: unknown key"),
    ({"name": "x", "experts": 8, "top_k": 2, "moe_layers": 2, "hidden": 64, "expert_intermediate": 64,
      "ffn_weights_gib": 99.0}, "the shape gives"),
])
def test_bad_catalog_tables(table, needle):
    with pytest.raises(ConfigError, match=needle):
        _validate_table("t", table, "extra.toml")
