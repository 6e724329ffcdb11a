"""benchmarks.mineclip_throughput: the alternating-round timing and the ratios it prints, with a
fake clock (never time in tests)."""

from benchmarks import mineclip_throughput as mt


def test_alternate_reverses_the_order_every_round_and_records_the_load():
    order = []
    calls = {"jax": lambda: order.append("jax"), "torch": lambda: order.append("torch")}
    cost = {"jax": 1.0, "torch": 3.0}

    def fake_timer(fn, repeats):
        fn()
        name = order[-1]
        return cost[name] * repeats, 2 * cost[name] * repeats

    loads = iter(range(100))
    times = mt.alternate(calls, rounds=3, repeats=2, timer=fake_timer, load=lambda: next(loads))
    # One warm-up call each, then jax/torch, torch/jax, jax/torch.
    assert order == ["jax", "torch", "jax", "torch", "torch", "jax", "jax", "torch"]
    assert times["jax"] == [(2.0, 4.0, 0), (2.0, 4.0, 3), (2.0, 4.0, 4)]
    assert times["torch"] == [(6.0, 12.0, 1), (6.0, 12.0, 2), (6.0, 12.0, 5)]


def test_summarize_takes_the_median_of_per_round_ratios():
    times = {
        "jax": [(1.0, 2.0, 1.0), (2.0, 2.0, 3.0), (1.0, 4.0, 2.0)],
        "torch": [(1.5, 3.0, 1.5), (5.0, 2.0, 3.5), (1.1, 4.0, 2.5)],
    }
    s = mt.summarize(times, "jax", "torch")
    assert s["wall_ratio"] == 1.5  # per-round ratios 1.5, 2.5, 1.1
    assert s["cpu_ratio"] == 1.0
    assert s["load"] == (1.0, 3.5)
