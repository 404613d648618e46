import subprocess
import sys
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ttt_lab.env.dataset import batches, dataset_jsonl, make_dataset
from ttt_lab.env.settings import DatasetConfig
from ttt_lab.errors import InvalidSetting


def assert_balanced(cfg: DatasetConfig, seed: int) -> None:
    examples = make_dataset(cfg, seed)
    assert len(examples) == cfg.size
    for batch in batches(examples, cfg.examples_per_batch):
        counts = Counter(e.stratum for e in batch)
        mean = len(batch) / cfg.num_strata
        for k in range(cfg.num_strata):
            assert abs(counts.get(k, 0) - mean) < 1, (k, counts.get(k, 0), mean)
        firsts = sum(e.model_first for e in batch)
        assert abs(firsts - len(batch) / 2) <= 0.5


@pytest.mark.parametrize(("per_batch", "strata"), [(32, 32), (30, 32), (100, 32), (60, 60), (7, 3)])
def test_every_batch_of_a_10000_example_dataset_is_balanced(per_batch: int, strata: int) -> None:
    assert_balanced(DatasetConfig(size=10_000, examples_per_batch=per_batch, num_strata=strata), seed=3)


@given(st.integers(1, 400), st.integers(1, 64), st.integers(1, 40), st.integers())
def test_stratification_balances_any_shape(size: int, per_batch: int, strata: int, seed: int) -> None:
    assert_balanced(DatasetConfig(size=size, examples_per_batch=per_batch, num_strata=strata), seed)


@given(st.floats(0, 1), st.floats(0, 1), st.integers(1, 50), st.sampled_from(["stratified", "iid"]))
def test_p_random_stays_in_range_and_in_its_stratum(a: float, b: float, strata: int, sampling: str) -> None:
    lo, hi = min(a, b), max(a, b)
    cfg = DatasetConfig(size=200, p_min=lo, p_max=hi, num_strata=strata, sampling=sampling)
    width = (hi - lo) / strata
    for e in make_dataset(cfg, 0):
        assert lo <= e.p_random <= hi
        if sampling == "stratified":
            assert lo + e.stratum * width - 1e-12 <= e.p_random <= lo + (e.stratum + 1) * width + 1e-12
        else:
            assert e.stratum == -1


def test_totals_over_the_dataset_are_balanced_when_batches_do_not_divide() -> None:
    cfg = DatasetConfig(size=3000, examples_per_batch=30, num_strata=32)
    counts = Counter(e.stratum for e in make_dataset(cfg, 1))
    assert max(counts.values()) - min(counts.values()) <= 1


def test_iid_sampling_is_not_balanced_per_batch() -> None:
    cfg = DatasetConfig(size=10_000, examples_per_batch=64, num_strata=8, sampling="iid")
    edges = [cfg.p_min + k * (cfg.p_max - cfg.p_min) / 8 for k in range(9)]
    worst = 0.0
    for batch in batches(make_dataset(cfg, 0), 64):
        counts = Counter(sum(e.p_random >= x for x in edges[1:-1]) for e in batch)
        worst = max(worst, max(abs(counts.get(k, 0) - 8) for k in range(8)))
    assert worst >= 3


def test_seeds_differ_and_settings_matter() -> None:
    cfg = DatasetConfig(size=50)
    a, b = make_dataset(cfg, 0), make_dataset(cfg, 1)
    assert a != b
    assert len({e.seed for e in a}) == 50
    assert make_dataset(cfg, 0) == a


@pytest.mark.parametrize(("first", "symbol", "check"), [
    ("model", "X", lambda es: all(e.model_first for e in es)),
    ("opponent", "O", lambda es: not any(e.model_first for e in es) and {e.model_symbol for e in es} == {"O"}),
    ("random", "random", lambda es: 10 < sum(e.model_first for e in es) < 90 and
     {e.model_symbol for e in es} == {"X", "O"}),
    ("alternate", "alternate", lambda es: sum(e.model_symbol == "X" for e in es) == 50),
])
def test_first_player_and_symbol_modes(first: str, symbol: str, check) -> None:
    assert check(make_dataset(DatasetConfig(size=100, first_player=first, model_symbol=symbol), 5))


def test_dataset_bytes_are_identical_in_two_processes() -> None:
    code = (
        "import sys; from ttt_lab.env.dataset import make_dataset, dataset_jsonl;"
        "from ttt_lab.env.settings import DatasetConfig;"
        "sys.stdout.write(dataset_jsonl(make_dataset(DatasetConfig(size=500, num_strata=7), 11)))"
    )
    outs = [
        subprocess.run([sys.executable, "-c", code], capture_output=True, check=True,
                       env={"PYTHONHASHSEED": h}).stdout
        for h in ("1", "99")
    ]
    assert outs[0] == outs[1]
    assert outs[0].decode() == dataset_jsonl(make_dataset(DatasetConfig(size=500, num_strata=7), 11))


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"p_min": 0.8, "p_max": 0.2}, "dataset.p_min"),
        ({"p_min": -0.1}, "dataset.p_min"),
        ({"p_max": 1.5}, "dataset.p_max"),
        ({"num_strata": 0}, "dataset.num_strata"),
        ({"size": 2.5}, "dataset.size"),
        ({"sampling": "balanced"}, "dataset.sampling"),
        ({"first_player": "me"}, "dataset.first_player"),
        ({"model_symbol": "Z"}, "dataset.model_symbol"),
        ({"examples_per_batch": True}, "dataset.examples_per_batch"),
    ],
)
def test_bad_dataset_settings(kwargs: dict, field: str) -> None:
    with pytest.raises(InvalidSetting) as e:
        make_dataset(DatasetConfig(**kwargs), 0)
    assert e.value.field == field
    assert "Allowed:" in str(e.value)
