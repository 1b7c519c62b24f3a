"""The Nexmark benchmark's event generator (bench/nexmark/generator.py) against the rules it follows
(Beam's generator): exact proportions of persons, auctions and bids, ids and references within Beam's
ranges, hot auctions and bidders at their expected shares, event times at the configured rate, the
documented bound on disorder, determinism per seed, and the files it writes for Spark's file source."""

import os
import sys
import time

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench", "nexmark"))

import generator as g  # noqa: E402
from generator import Config, generate, write_bids  # noqa: E402

N = 100_000


@pytest.fixture(scope="module")
def in_order():
    return generate(Config(N, seed=7))


def kinds(n):
    rem = np.asarray(n) % 50
    return np.where(rem < 1, 0, np.where(rem < 4, 1, 2))  # 0 person, 1 auction, 2 bid


def event_numbers(events, kind):
    n = np.arange(events, dtype=np.int64)
    return n[kinds(n) == kind]


def merged_times(frames, arrival):
    """date_time of all events in arrival order (rebuilt from the three frames)."""
    k = kinds(arrival)
    out = np.empty(len(arrival), dtype=np.int64)
    for kind, name in enumerate(("person", "auction", "bid")):
        out[k == kind] = frames[name]["date_time"].to_numpy()
    return out


def lateness(times):
    """max(0, latest earlier time - own time) for each event of a sequence."""
    prev_max = np.maximum.accumulate(times)
    prev = np.concatenate([[times[0]], prev_max[:-1]])
    return np.maximum(prev - times, 0)


# --- determinism --------------------------------------------------------------

@pytest.mark.parametrize("disorder", [0, 200])
def test_same_seed_same_frames(disorder):
    a = generate(Config(20_000, seed=3, max_disorder_ms=disorder))
    b = generate(Config(20_000, seed=3, max_disorder_ms=disorder))
    for k in ("person", "auction", "bid"):
        pd.testing.assert_frame_equal(a[k], b[k])


def test_different_seed_different_frames():
    a = generate(Config(20_000, seed=3))
    b = generate(Config(20_000, seed=4))
    for k in ("person", "auction", "bid"):
        assert not a[k].equals(b[k])
    assert not np.array_equal(a["bid"]["price"], b["bid"]["price"])
    assert not np.array_equal(a["bid"]["auction"], b["bid"]["auction"])


def test_columns_and_dtypes(in_order):
    assert list(in_order["bid"].columns) == [
        "auction", "bidder", "price", "channel", "url", "date_time", "extra"]
    assert list(in_order["auction"].columns) == [
        "id", "item_name", "description", "initial_bid", "reserve", "date_time",
        "expires", "seller", "category", "extra"]
    assert list(in_order["person"].columns) == [
        "id", "name", "email_address", "credit_card", "city", "state", "date_time", "extra"]
    for frame in in_order.values():
        for c in frame.columns:
            if c in ("auction", "bidder", "price", "date_time", "id", "initial_bid",
                     "reserve", "expires", "seller", "category"):
                assert frame[c].dtype == np.int64, c
            else:
                assert frame[c].dtype == object and isinstance(frame[c].iloc[0], str), c


# --- proportions and ids ------------------------------------------------------

@pytest.mark.parametrize("disorder", [0, 20])
@pytest.mark.parametrize("events", [0, 1, 2, 4, 5, 49, 50, 51, 53, 54, 99, 12_345, N])
def test_proportions_exact(events, disorder):
    frames = generate(Config(events, seed=1, max_disorder_ms=disorder, prob_delayed_event=0.5))
    if disorder:
        frames = {k: (v.sort_values("id") if "id" in v else v) for k, v in frames.items()}
    n = np.arange(events)
    expected = {"person": int((kinds(n) == 0).sum()), "auction": int((kinds(n) == 1).sum()),
                "bid": int((kinds(n) == 2).sum())}
    assert {k: len(v) for k, v in frames.items()} == expected == g.kind_counts(events)
    # consecutive ids starting at 1000 (Beam FIRST_PERSON_ID / FIRST_AUCTION_ID)
    np.testing.assert_array_equal(frames["person"]["id"], 1000 + np.arange(expected["person"]))
    np.testing.assert_array_equal(frames["auction"]["id"], 1000 + np.arange(expected["auction"]))


def test_proportions_1_3_46(in_order):
    assert len(in_order["person"]) == N // 50
    assert len(in_order["auction"]) == 3 * N // 50
    assert len(in_order["bid"]) == 46 * N // 50


def test_bid_references_follow_beam_rule(in_order):
    bids = in_order["bid"]
    n = event_numbers(N, 2)
    last_auction = 3 * (n // 50) + 2          # base-0 id of the latest auction before the bid
    a = bids["auction"].to_numpy() - 1000
    assert (a >= np.maximum(last_auction - 100, 0)).all()   # in flight (numInFlightAuctions)
    assert (a <= last_auction + 10).all()                   # at most AUCTION_ID_LEAD ahead
    num_people = n // 50 + 1
    active = np.minimum(num_people, 1000)
    p = bids["bidder"].to_numpy() - 1000
    assert (p >= num_people - active).all()                  # an 'active' person
    assert (p <= num_people - 1 + 10).all()                  # at most PERSON_ID_LEAD ahead
    # almost all bids reference an auction / person already generated
    assert (a <= last_auction).mean() > 0.93
    assert (p <= num_people - 1).mean() > 0.98
    # an unknown id can only be one of the 'lead' ids after the last generated one
    auction_ids = set(in_order["auction"]["id"])
    missing = np.array(sorted(set(bids["auction"]) - auction_ids))
    assert missing.size == 0 or missing.min() > max(auction_ids)
    person_ids = set(in_order["person"]["id"])
    missing = np.array(sorted(set(bids["bidder"]) - person_ids))
    assert missing.size == 0 or missing.min() > max(person_ids)


def test_auction_sellers_follow_beam_rule(in_order):
    auctions = in_order["auction"]
    n = event_numbers(N, 1)
    num_people = n // 50 + 1
    s = auctions["seller"].to_numpy() - 1000
    assert (s >= num_people - np.minimum(num_people, 1000)).all()
    assert (s <= num_people - 1 + 10).all()
    hot = (n // 50) // 100 * 100
    frac = (s == hot).mean()
    expected = np.mean(0.75 + 0.25 / (np.minimum(num_people, 1000) + 10))
    assert abs(frac - expected) < 5 * np.sqrt(expected * (1 - expected) / len(n))


def _hot_fraction(bids, n, ratio, bidders=False):
    if bidders:
        num_people = n // 50 + 1
        hot = (n // 50) // 100 * 100 + 1
        span = np.minimum(num_people, 1000) + 10
        ids = bids["bidder"].to_numpy() - 1000
    else:
        last = 3 * (n // 50) + 2
        hot = last // 100 * 100
        span = last - np.maximum(last - 100, 0) + 1 + 10
        ids = bids["auction"].to_numpy() - 1000
    # P(hot) = P(hot branch) + P(random branch) * P(random pick == hot id)
    expected = np.mean((1 - 1 / ratio) + (1 / ratio) / span)
    return (ids == hot).mean(), expected


@pytest.mark.parametrize("ratio", [1, 2, 4])
def test_hot_auctions(ratio):
    events = 100_000
    bids = generate(Config(events, seed=11, hot_auction_ratio=ratio))["bid"]
    frac, expected = _hot_fraction(bids, event_numbers(events, 2), ratio)
    sigma = np.sqrt(expected * (1 - expected) / len(bids))
    assert abs(frac - expected) < 5 * sigma + 1e-9
    if ratio == 2:
        assert 0.49 < frac < 0.52


@pytest.mark.parametrize("ratio", [1, 4])
def test_hot_bidders(ratio):
    events = 100_000
    bids = generate(Config(events, seed=12, hot_bidders_ratio=ratio))["bid"]
    frac, expected = _hot_fraction(bids, event_numbers(events, 2), ratio, bidders=True)
    sigma = np.sqrt(expected * (1 - expected) / len(bids))
    assert abs(frac - expected) < 5 * sigma + 1e-9
    if ratio == 4:
        assert 0.74 < frac < 0.76


# --- timestamps ---------------------------------------------------------------

@pytest.mark.parametrize("rate", [10_000, 7_000, 3])
def test_timestamps_in_order(rate):
    events = 30_000
    cfg = Config(events, seed=5, rate=rate)
    frames = generate(cfg)
    assert g.arrival_event_numbers(cfg) is None
    n = np.arange(events, dtype=np.int64)
    times = merged_times(frames, n)
    expected = cfg.base_time_ms + (n * 1000) // rate
    np.testing.assert_array_equal(times, expected)
    assert (np.diff(times) >= 0).all()
    for f in frames.values():
        assert f["date_time"].is_monotonic_increasing
    # the events fill [base, base + events/rate s): the span is events / rate seconds
    assert times[0] == cfg.base_time_ms
    end = g.event_time_ms(cfg, events)   # time of the (not generated) next event
    assert times[-1] < cfg.base_time_ms + events * 1000 / rate <= times[-1] + 1000 / rate + 1
    if (events * 1000) % rate == 0:
        assert end - cfg.base_time_ms == events * 1000 // rate


def test_default_span(in_order):
    # 100,000 events at the default 10,000 events/s: 10 s, the last one at 9.9999 s
    times = in_order["bid"]["date_time"]
    assert times.min() == 1_700_000_000_000
    assert times.max() == 1_700_000_000_000 + 9_999


@pytest.mark.parametrize("d,p", [(1, 0.1), (250, 0.1), (2_000, 0.5), (50, 1.0)])
def test_random_delay_disorder_bound(in_order, d, p):
    cfg = Config(N, seed=7, max_disorder_ms=d, prob_delayed_event=p)
    frames = generate(cfg)
    arrival = g.arrival_event_numbers(cfg)
    np.testing.assert_array_equal(np.sort(arrival), np.arange(N))
    times = merged_times(frames, arrival)
    np.testing.assert_array_equal(times, g.event_time_ms(cfg, arrival))
    late = lateness(times)
    assert g.disorder_bound_ms(cfg) == d
    assert late.max() <= d                       # the documented bound, exactly
    assert late.max() >= 0.8 * d                 # ... and it is actually used
    for f in frames.values():                    # holds within each kind too
        assert lateness(f["date_time"].to_numpy()).max() <= d
    assert not frames["bid"]["date_time"].is_monotonic_increasing
    # disorder only permutes rows: same events as without disorder
    for kind, name in enumerate(("person", "auction", "bid")):
        sel = arrival[kinds(arrival) == kind]
        local = {0: sel // 50, 1: sel // 50 * 3 + sel % 50 - 1, 2: sel // 50 * 46 + sel % 50 - 4}[kind]
        expected = in_order[name].iloc[local].reset_index(drop=True)
        pd.testing.assert_frame_equal(frames[name], expected)


def test_beam_out_of_order_groups():
    events, gsize = 50_500, 1000
    cfg = Config(events, seed=2, out_of_order_group_size=gsize)
    arrival = g.arrival_event_numbers(cfg)
    k = np.arange(events)
    full = events // gsize * gsize
    np.testing.assert_array_equal(arrival[:full], k[:full] // gsize * gsize + (k[:full] * 953) % gsize)
    np.testing.assert_array_equal(arrival[full:], k[full:])
    np.testing.assert_array_equal(np.sort(arrival), k)
    frames = generate(cfg)
    late = lateness(merged_times(frames, arrival))
    bound = g.disorder_bound_ms(cfg)
    assert bound == 99                        # t(1000j + 999) - t(1000j) = floor(99.9) ms
    assert 0.9 * bound <= late.max() <= bound


def test_groups_and_delays_combined():
    cfg = Config(40_000, seed=2, out_of_order_group_size=100, max_disorder_ms=30)
    arrival = g.arrival_event_numbers(cfg)
    np.testing.assert_array_equal(np.sort(arrival), np.arange(cfg.events))
    late = lateness(merged_times(generate(cfg), arrival))
    assert late.max() <= g.disorder_bound_ms(cfg) == 30 + 2 * 9


# --- values -------------------------------------------------------------------

def test_prices_and_fields(in_order):
    bids, auctions, persons = in_order["bid"], in_order["auction"], in_order["person"]
    for prices in (bids["price"], auctions["initial_bid"]):
        assert prices.dtype == np.int64
        assert (prices > 0).all() and prices.min() >= 100 and prices.max() <= 100_000_000
    # log-uniform: log10(price/100) ~ U[0, 6)
    assert abs(np.log10(bids["price"] / 100).mean() - 3.0) < 0.05
    assert (auctions["reserve"] > auctions["initial_bid"]).all()
    assert (auctions["expires"] > auctions["date_time"]).all()
    assert auctions["category"].between(10, 14).all()
    for col, longest in (("item_name", 19), ("description", 99)):
        lens = auctions[col].str.len()
        assert lens.max() <= longest
        assert not auctions[col].str.startswith(" ").any()
    assert persons["credit_card"].str.fullmatch(r"\d{4} \d{4} \d{4} \d{4}").all()
    assert persons["email_address"].str.endswith(".com").all()
    assert persons["state"].isin(["AZ", "CA", "ID", "OR", "WA", "WY"]).all()
    hot = bids["channel"].isin(["Google", "Facebook", "Baidu", "Apple"]).mean()
    assert 0.48 < hot < 0.52
    assert bids.groupby("channel")["url"].nunique().max() == 1   # one url per channel
    assert (bids["extra"] == "").all()


def test_invalid_config():
    with pytest.raises(ValueError):
        Config(-1)
    with pytest.raises(ValueError):
        Config(10, rate=0)
    with pytest.raises(ValueError):
        Config(10, max_disorder_ms=-1)
    with pytest.raises(ValueError):
        Config(10, out_of_order_group_size=953)


# --- writing ------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_write_bids(tmp_path, fmt):
    bids = generate(Config(5_000, seed=1, max_disorder_ms=100))["bid"]
    folder = tmp_path / "bids"
    paths = write_bids(bids, str(folder), 4, fmt=fmt)
    assert [os.path.basename(p) for p in paths] == [f"part-{i:04d}.{fmt}" for i in range(4)]
    assert sorted(os.listdir(folder)) == sorted(os.path.basename(p) for p in paths)
    mtimes = [os.stat(p).st_mtime for p in paths]
    assert np.diff(mtimes).tolist() == [1.0, 1.0, 1.0]
    assert mtimes[-1] <= time.time()
    if fmt == "csv":
        with open(paths[0]) as fh:
            assert fh.readline().replace('"', "").strip() == ",".join(bids.columns)
        parts = [pd.read_csv(p, keep_default_na=False) for p in paths]
    else:
        parts = [pd.read_parquet(p) for p in paths]
    assert [len(p) for p in parts] == [len(bids) * (i + 1) // 4 - len(bids) * i // 4 for i in range(4)]
    back = pd.concat(parts, ignore_index=True)
    pd.testing.assert_frame_equal(back, bids, check_dtype=False)
    assert back["date_time"].dtype == np.int64
    with pytest.raises(FileExistsError):
        write_bids(bids, str(folder), 2, fmt=fmt)
