"""Seeded, vectorized Nexmark event generator (Person / Auction / Bid).

This is an independent numpy implementation of the generation *rules* of the
Nexmark benchmark.  The rules were learnt by reading (not copying) these
classes:

* apache/beam, ``sdks/java/testing/nexmark`` (package
  ``org.apache.beam.sdk.nexmark.sources.generator``): ``Generator``,
  ``GeneratorConfig``, ``model/PersonGenerator``, ``model/AuctionGenerator``,
  ``model/BidGenerator``, ``model/PriceGenerator``, ``model/StringsGenerator``,
  plus ``NexmarkConfiguration`` (defaults) and
  ``sources/UnboundedEventSource`` (the "held back / delayed event" rule);
* nexmark/nexmark, module ``nexmark-flink`` (package
  ``com.github.nexmark.flink.generator``): ``NexmarkGenerator``,
  ``GeneratorConfig`` and ``model/BidGenerator`` (the Bid ``channel`` / ``url``
  fields, which Beam's Bid does not have).

Rules reproduced (``n`` is the event number, 0-based; Beam's "event id" equals
``n`` here because there is a single generator with ``firstEventId = 0``)
----------------------------------------------------------------------------
* **Kinds.**  ``n % 50``: 0 -> Person, 1..3 -> Auction, 4..49 -> Bid
  (proportions 1 : 3 : 46, PROPORTION_DENOMINATOR = 50).
* **Ids.**  ``lastBase0PersonId(n) = n // 50``; ``lastBase0AuctionId(n)`` is the
  base-0 id of the latest auction with event number <= n (``3*(n//50) - 1`` for
  a person slot, ``3*(n//50) + n%50 - 1`` for an auction slot,
  ``3*(n//50) + 2`` for a bid slot).  A person gets id
  ``1000 + lastBase0PersonId(n)``, an auction ``1000 + lastBase0AuctionId(n)``
  (FIRST_PERSON_ID = FIRST_AUCTION_ID = 1000).
* **Random person reference** (``nextBase0PersonId``):
  ``numPeople = lastBase0PersonId + 1``, ``active = min(numPeople,
  num_active_people)``, id = ``numPeople - active + U[0, active + 10)``
  (PERSON_ID_LEAD = 10: up to 10 not-yet-generated persons may be referenced).
* **Random auction reference** (``nextBase0AuctionId``):
  ``last = lastBase0AuctionId``, ``min = max(last - num_in_flight_auctions, 0)``,
  id = ``min + U[0, last - min + 1 + 10)`` (AUCTION_ID_LEAD = 10).
* **Hot auctions / bidders / sellers.**  A bid goes to the hot auction
  ``(last // 100) * 100`` if ``nextInt(hot_auction_ratio) > 0`` (probability
  ``1 - 1/hot_auction_ratio``), otherwise to a random auction as above.  The
  bidder is the hot bidder ``(lastPerson // 100) * 100 + 1`` if
  ``nextInt(hot_bidders_ratio) > 0``, else a random person.  An auction's
  seller is the hot seller ``(lastPerson // 100) * 100`` if
  ``nextInt(hot_sellers_ratio) > 0``, else a random person.  (HOT_*_RATIO
  batch size 100 as in Beam.)  So with the defaults (2, 4, 4) ~1/2 of the bids
  go to a hot auction, ~3/4 come from a hot bidder, ~3/4 of the auctions have
  a hot seller (plus the small chance that the random branch picks the hot id).
* **Prices** (``PriceGenerator``): ``round(10 ** (U[0,1) * 6) * 100)`` cents,
  i.e. log-uniform in [$1, $1,000,000).  Auction ``reserve = initial_bid +
  nextPrice``.
* **Auctions**: category ``10 + U[0,5)``; item_name / description are
  ``nextString(20)`` / ``nextString(100)`` (length ``3 + U[0, max-3)``, each
  char a space with probability 1/13 else a..z, then trimmed); ``expires =
  date_time + 1 + U[0, max(2*horizon, 1))`` with ``horizon = t(n +
  num_in_flight_auctions*50//3) - t(n)`` (Beam's ``nextAuctionLengthMs``).
* **Persons**: name from Beam's 11 first x 9 last names, email
  ``nextString(7) + "@" + nextString(5) + ".com"``, credit card four ``%04d``
  groups, city from Beam's 10 cities, state from its 6 states.
* **Bid channel / url** (nexmark-flink ``BidGenerator``): with probability 1/2
  one of the hot channels Google/Facebook/Baidu/Apple (each with a fixed url),
  else ``channel-<k>``, ``k = U[0, 10000)``, whose url is a base url
  ``https://www.nexmark.com/<s>/<s>/<s>/item.htm?query=1`` followed, for 9 in
  10 channels, by ``&channel_id=<abs(Integer.reverse(k))>``.  The 10,004
  (channel, url) pairs are drawn once per seed, so a channel always has the
  same url.
* **Event time** (``GeneratorConfig.timestampAndInterEventDelayUsForEvent``
  with one constant rate): ``t(n) = base_time_ms + floor(n * 1000 / rate)``.
  The events therefore fill ``[base_time_ms, base_time_ms + events*1000/rate)``:
  a span of exactly ``events / rate`` seconds (the last event sits in the
  final ``1000/rate`` ms of it).
* **Out-of-order groups** (``GeneratorConfig.nextAdjustedEventNumber``,
  ``out_of_order_group_size = g``, Beam default 1): arrival slot ``k`` carries
  event ``(k // g) * g + (k * 953) % g``, i.e. events are shuffled within
  consecutive groups of ``g``.  Each event keeps its own time ``t(n)``.
* **Delayed events** (``UnboundedEventSource``: with probability
  ``probDelayedEvent`` an event is held back by ``1 + U[0, D)`` ms of
  wall-clock time and emitted when that time comes): arrival slot ``k`` gets
  delay ``U_k = 0`` with probability ``1 - prob_delayed_event`` (Beam default
  0.1), else ``U_k`` uniform in ``[1, max_disorder_ms]``; the arrival order is
  the sort of slots by ``t(k) + U_k``; ties go to the smaller delay first, then
  to the lower slot (a held-back event is released after the events generated
  at its release time, so a delay of ``U`` ms really makes it ``U`` ms late).

Disorder bound (what tests check)
--------------------------------
Define the lateness of an arriving event ``e`` as
``max(0, max{date_time(f) : f arrived before e} - date_time(e))`` over all
three kinds together.  Then (see ``disorder_bound_ms``):

* ``max_disorder_ms = 0`` and ``out_of_order_group_size = 1`` (the default):
  arrival order is event-number order and date_time is non-decreasing.
* ``max_disorder_ms = d > 0``, group size 1: **every event's date_time is at
  most d ms behind the latest date_time generated before it** (more precisely
  lateness(e) <= U_e <= d, and only delayed events are ever late).  The bound
  is attained: an event delayed by U arrives after the events whose time is
  its own time + U.
* group size ``g > 1``, ``d = 0``: lateness <= ``G``, the largest time span
  ``t(last) - t(first)`` of one full group (<= ceil((g-1)*1000/rate)).
* both: lateness <= ``d + 2*G``.

Deliberate deviations from Beam / nexmark-flink
-----------------------------------------------
* Randomness comes from numpy ``Generator(PCG64(...))`` streams spawned from
  ``SeedSequence(seed)`` (one per kind, one for the channel pool, one for
  disorder), not from ``java.util.Random(eventId)``; values are therefore not
  bit-identical to Beam's, only identically distributed.  Every branch's
  random numbers are drawn for all rows and then selected (vectorization).
  Event contents depend only on (seed, parameters, event number), never on the
  disorder settings: disorder only permutes rows.
* ``extra`` is always the empty string (Beam pads events to avgXxxByteSize
  with ``nextExtra``; the padding has no semantics and costs memory).
* One generator at the full ``rate`` (Beam's default numEventGenerators = 100
  runs parallel timelines); a constant rate (no SINE/SQUARE rate shape); the
  time formula uses exact integer arithmetic instead of a rounded integer
  inter-event delay in microseconds (identical when 10**6 / rate is an
  integer, e.g. the default 10,000 events/s = 100 us).
* The random delay is applied by event time rather than wall-clock time and
  its maximum is ``max_disorder_ms`` instead of ``occasionalDelaySec``; Beam
  applies it only to rate-limited unbounded sources.
* For a trailing partial out-of-order group (events % g != 0) Beam's formula
  is not a permutation of the remaining events, so that tail stays in order.
  Group sizes that are multiples of 953 are rejected for the same reason.
* ``channel_id`` uses the mathematical absolute value (Java's
  ``Math.abs(Integer.MIN_VALUE)`` overflow for ``channel-1`` is not kept).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = [
    "Config",
    "generate",
    "write_bids",
    "arrival_positions",
    "write_kafka",
    "arrival_event_numbers",
    "event_time_ms",
    "disorder_bound_ms",
    "kind_counts",
    "FIRST_PERSON_ID",
    "FIRST_AUCTION_ID",
]

# --- constants of the Nexmark generator (GeneratorConfig and model/*) -------
FIRST_PERSON_ID = 1000
FIRST_AUCTION_ID = 1000
FIRST_CATEGORY_ID = 10
PERSON_PROPORTION = 1
AUCTION_PROPORTION = 3
BID_PROPORTION = 46
PROPORTION_DENOMINATOR = PERSON_PROPORTION + AUCTION_PROPORTION + BID_PROPORTION  # 50
PERSON_ID_LEAD = 10
AUCTION_ID_LEAD = 10
HOT_BATCH = 100  # HOT_AUCTION_RATIO / HOT_BIDDER_RATIO / HOT_SELLER_RATIO batch size
NUM_CATEGORIES = 5
OUT_OF_ORDER_STRIDE = 953
HOT_CHANNELS = ("Google", "Facebook", "Baidu", "Apple")
HOT_CHANNELS_RATIO = 2
CHANNELS_NUMBER = 10_000

_FIRST_NAMES = "Peter,Paul,Luke,John,Saul,Vicky,Kate,Julie,Sarah,Deiter,Walter".split(",")
_LAST_NAMES = "Shultz,Abrams,Spencer,White,Bartels,Walton,Smith,Jones,Noris".split(",")
_US_CITIES = (
    "Phoenix,Los Angeles,San Francisco,Boise,Portland,Bend,Redmond,Seattle,Kent,Cheyenne"
).split(",")
_US_STATES = "AZ,CA,ID,OR,WA,WY".split(",")

_NAME_POOL = np.array([f"{f} {l}" for f in _FIRST_NAMES for l in _LAST_NAMES], dtype=object)
_CITY_POOL = np.array(_US_CITIES, dtype=object)
_STATE_POOL = np.array(_US_STATES, dtype=object)

BID_COLUMNS = ["auction", "bidder", "price", "channel", "url", "date_time", "extra"]
AUCTION_COLUMNS = [
    "id", "item_name", "description", "initial_bid", "reserve",
    "date_time", "expires", "seller", "category", "extra",
]
PERSON_COLUMNS = ["id", "name", "email_address", "credit_card", "city", "state", "date_time", "extra"]
_STR_COLUMNS = {"channel", "url", "extra", "item_name", "description", "name",
                "email_address", "credit_card", "city", "state"}


@dataclass(frozen=True)
class Config:
    events: int                 # total events (persons + auctions + bids)
    seed: int = 0
    rate: int = 10_000          # events per second of event time (Beam firstEventRate)
    base_time_ms: int = 1_700_000_000_000  # epoch millis of event 0
    max_disorder_ms: int = 0    # max random delay of a delayed event (0 = in order)
    hot_auction_ratio: int = 2
    hot_bidders_ratio: int = 4
    hot_sellers_ratio: int = 4
    num_active_people: int = 1000
    num_in_flight_auctions: int = 100
    out_of_order_group_size: int = 1   # Beam outOfOrderGroupSize (1 = off)
    prob_delayed_event: float = 0.1    # Beam probDelayedEvent (used when max_disorder_ms > 0)

    def __post_init__(self) -> None:
        if self.events < 0:
            raise ValueError("events must be >= 0")
        if self.rate <= 0:
            raise ValueError("rate must be > 0")
        if self.max_disorder_ms < 0:
            raise ValueError("max_disorder_ms must be >= 0")
        for name in ("hot_auction_ratio", "hot_bidders_ratio", "hot_sellers_ratio",
                     "num_active_people", "num_in_flight_auctions", "out_of_order_group_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1")
        if self.out_of_order_group_size % OUT_OF_ORDER_STRIDE == 0:
            raise ValueError("out_of_order_group_size must not be a multiple of 953")
        if not 0.0 <= self.prob_delayed_event <= 1.0:
            raise ValueError("prob_delayed_event must be in [0, 1]")


# --- small helpers ----------------------------------------------------------

def _rngs(seed: int) -> dict[str, np.random.Generator]:
    names = ("person", "auction", "bid", "channels", "disorder")
    children = np.random.SeedSequence(seed).spawn(len(names))
    return {n: np.random.Generator(np.random.PCG64(c)) for n, c in zip(names, children)}


def _below(rng: np.random.Generator, high, size: int) -> np.ndarray:
    """Uniform integers in [0, high) (high: scalar or int64 array of `size`)."""
    return (rng.random(size) * high).astype(np.int64)


def _price(rng: np.random.Generator, size: int) -> np.ndarray:
    # Java Math.round(x) == floor(x + 0.5)
    return np.floor(10.0 ** (rng.random(size) * 6.0) * 100.0 + 0.5).astype(np.int64)


def _to_object(bytes_arr: np.ndarray) -> np.ndarray:
    return np.strings.decode(bytes_arr, "ascii").astype(object)


def _rand_bytes(rng: np.random.Generator, m: int, max_length: int,
                special: int = ord(" "), trim: bool = True) -> np.ndarray:
    """Beam StringsGenerator.nextString(random, max_length) for m rows, as an 'S' array."""
    width = max_length - 1
    lens = 3 + _below(rng, max_length - 3, m)
    # one draw in [0, 13*26): v < 26 -> special char (p = 1/13), else 'a' + v % 26
    v = rng.integers(0, 13 * 26, size=(m, width), dtype=np.uint16)
    chars = np.where(v < 26, special, ord("a") + v % 26).astype(np.uint8)
    chars[np.arange(width)[None, :] >= lens[:, None]] = 0
    out = np.ascontiguousarray(chars).view(f"S{width}").reshape(m)
    if trim:
        out = np.strings.strip(out, b" ")
    return out


def _rand_strings(rng: np.random.Generator, m: int, max_length: int) -> np.ndarray:
    return _to_object(_rand_bytes(rng, m, max_length))


def _empty_strings(m: int) -> np.ndarray:
    return np.full(m, "", dtype=object)


def event_time_ms(config: Config, n) -> np.ndarray:
    """Event time of event number(s) n: base_time_ms + floor(n * 1000 / rate)."""
    n = np.asarray(n, dtype=np.int64)
    return config.base_time_ms + (n * 1000) // config.rate


def kind_counts(events: int) -> dict[str, int]:
    """Exact numbers of persons / auctions / bids among the first `events` events."""
    full, rem = divmod(events, PROPORTION_DENOMINATOR)
    return {
        "person": full * PERSON_PROPORTION + min(rem, PERSON_PROPORTION),
        "auction": full * AUCTION_PROPORTION
        + min(max(rem - PERSON_PROPORTION, 0), AUCTION_PROPORTION),
        "bid": full * BID_PROPORTION
        + max(rem - PERSON_PROPORTION - AUCTION_PROPORTION, 0),
    }


def _kind_event_numbers(events: int, lo: int, hi: int) -> np.ndarray:
    """Event numbers n < events with lo <= n % 50 < hi, ascending."""
    epochs = np.arange((events + PROPORTION_DENOMINATOR - 1) // PROPORTION_DENOMINATOR,
                       dtype=np.int64)
    n = (epochs[:, None] * PROPORTION_DENOMINATOR + np.arange(lo, hi, dtype=np.int64)).ravel()
    return n[n < events]


def last_base0_person_id(n: np.ndarray) -> np.ndarray:
    return (n // PROPORTION_DENOMINATOR) * PERSON_PROPORTION  # PERSON_PROPORTION == 1


def last_base0_auction_id(n: np.ndarray) -> np.ndarray:
    epoch, off = np.divmod(n, PROPORTION_DENOMINATOR)
    off = np.where(off < PERSON_PROPORTION, -1,
                   np.minimum(off - PERSON_PROPORTION, AUCTION_PROPORTION - 1))
    return epoch * AUCTION_PROPORTION + off


def _random_person(cfg: Config, rng, n: np.ndarray) -> np.ndarray:
    num_people = last_base0_person_id(n) + 1
    active = np.minimum(num_people, cfg.num_active_people)
    return num_people - active + _below(rng, active + PERSON_ID_LEAD, len(n))


def _random_auction(cfg: Config, rng, n: np.ndarray) -> np.ndarray:
    last = last_base0_auction_id(n)
    lo = np.maximum(last - cfg.num_in_flight_auctions, 0)
    return lo + _below(rng, last - lo + 1 + AUCTION_ID_LEAD, len(n))


# --- per-kind column builders (rows in event-number order) ------------------

def _persons(cfg: Config, rng, n: np.ndarray) -> dict[str, np.ndarray]:
    m = len(n)
    name_idx = _below(rng, len(_FIRST_NAMES), m) * len(_LAST_NAMES) + _below(rng, len(_LAST_NAMES), m)
    email = np.strings.add(np.strings.add(np.strings.add(
        _rand_bytes(rng, m, 7), b"@"), _rand_bytes(rng, m, 5)), b".com")
    digits = rng.integers(0, 10_000, size=(m, 4), dtype=np.int64)
    cc = np.full((m, 19), ord(" "), dtype=np.uint8)
    for g in range(4):
        for p, div in enumerate((1000, 100, 10, 1)):
            cc[:, g * 5 + p] = ord("0") + (digits[:, g] // div) % 10
    credit_card = cc.view("S19").reshape(m)
    city = _CITY_POOL[_below(rng, len(_US_CITIES), m)]
    state = _STATE_POOL[_below(rng, len(_US_STATES), m)]
    return {
        "id": last_base0_person_id(n) + FIRST_PERSON_ID,
        "name": _NAME_POOL[name_idx],
        "email_address": _to_object(email),
        "credit_card": _to_object(credit_card),
        "city": city,
        "state": state,
        "date_time": event_time_ms(cfg, n),
        "extra": _empty_strings(m),
    }


def _auctions(cfg: Config, rng, n: np.ndarray) -> dict[str, np.ndarray]:
    m = len(n)
    hot = _below(rng, cfg.hot_sellers_ratio, m) > 0
    hot_seller = (last_base0_person_id(n) // HOT_BATCH) * HOT_BATCH
    seller = np.where(hot, hot_seller, _random_person(cfg, rng, n)) + FIRST_PERSON_ID
    category = FIRST_CATEGORY_ID + _below(rng, NUM_CATEGORIES, m)
    initial_bid = _price(rng, m)
    t = event_time_ms(cfg, n)
    events_for_auctions = (cfg.num_in_flight_auctions * PROPORTION_DENOMINATOR) // AUCTION_PROPORTION
    horizon = event_time_ms(cfg, n + events_for_auctions) - t
    expires = t + 1 + _below(rng, np.maximum(horizon * 2, 1), m)
    item_name = _rand_strings(rng, m, 20)
    description = _rand_strings(rng, m, 100)
    reserve = initial_bid + _price(rng, m)
    return {
        "id": last_base0_auction_id(n) + FIRST_AUCTION_ID,
        "item_name": item_name,
        "description": description,
        "initial_bid": initial_bid,
        "reserve": reserve,
        "date_time": t,
        "expires": expires,
        "seller": seller,
        "category": category,
        "extra": _empty_strings(m),
    }


def _channel_pool(rng) -> tuple[np.ndarray, np.ndarray]:
    """(channel, url) for the 4 hot channels followed by channel-0 .. channel-9999."""
    k = len(HOT_CHANNELS) + CHANNELS_NUMBER
    segs = [_rand_bytes(rng, k, 5, special=ord("_"), trim=False) for _ in range(3)]
    url = np.strings.add(b"https://www.nexmark.com/", segs[0])
    for s in segs[1:]:
        url = np.strings.add(np.strings.add(url, b"/"), s)
    url = np.strings.add(url, b"/item.htm?query=1")
    ch = np.arange(CHANNELS_NUMBER, dtype=np.uint32)
    rev = np.zeros_like(ch)
    for b in range(32):
        rev |= ((ch >> np.uint32(b)) & np.uint32(1)) << np.uint32(31 - b)
    channel_id = np.abs(rev.view(np.int32).astype(np.int64))
    suffix = np.strings.add(b"&channel_id=", channel_id.astype("S"))
    with_id = _below(rng, 10, CHANNELS_NUMBER) > 0
    tail = url[len(HOT_CHANNELS):]
    url = np.concatenate([url[:len(HOT_CHANNELS)],
                          np.where(with_id, np.strings.add(tail, suffix), tail)])
    names = np.concatenate([np.array(HOT_CHANNELS, dtype=object),
                            np.array([f"channel-{i}" for i in range(CHANNELS_NUMBER)], dtype=object)])
    return names, _to_object(url)


def _bids(cfg: Config, rng, pool, n: np.ndarray) -> dict[str, np.ndarray]:
    m = len(n)
    hot_a = _below(rng, cfg.hot_auction_ratio, m) > 0
    hot_auction = (last_base0_auction_id(n) // HOT_BATCH) * HOT_BATCH
    auction = np.where(hot_a, hot_auction, _random_auction(cfg, rng, n)) + FIRST_AUCTION_ID
    hot_b = _below(rng, cfg.hot_bidders_ratio, m) > 0
    hot_bidder = (last_base0_person_id(n) // HOT_BATCH) * HOT_BATCH + 1
    bidder = np.where(hot_b, hot_bidder, _random_person(cfg, rng, n)) + FIRST_PERSON_ID
    price = _price(rng, m)
    hot_c = _below(rng, HOT_CHANNELS_RATIO, m) > 0
    idx = np.where(hot_c, _below(rng, len(HOT_CHANNELS), m),
                   len(HOT_CHANNELS) + _below(rng, CHANNELS_NUMBER, m))
    names, urls = pool
    return {
        "auction": auction,
        "bidder": bidder,
        "price": price,
        "channel": names[idx],
        "url": urls[idx],
        "date_time": event_time_ms(cfg, n),
        "extra": _empty_strings(m),
    }


# --- disorder ---------------------------------------------------------------

def _delays_active(cfg: Config) -> bool:
    return cfg.max_disorder_ms > 0 and cfg.prob_delayed_event > 0


def arrival_event_numbers(config: Config) -> np.ndarray | None:
    """Event numbers in arrival order (a permutation of range(events)),
    or None when the arrival order is the event-number order."""
    cfg, n_ev = config, config.events
    g = cfg.out_of_order_group_size
    if g == 1 and not _delays_active(cfg):
        return None
    slots = np.arange(n_ev, dtype=np.int64)
    ev = slots
    if g > 1:
        full = (n_ev // g) * g
        ev = slots.copy()
        s = slots[:full]
        ev[:full] = (s // g) * g + (s * OUT_OF_ORDER_STRIDE) % g
    if _delays_active(cfg):
        rng = _rngs(cfg.seed)["disorder"]
        delayed = rng.random(n_ev) < cfg.prob_delayed_event
        delay = np.where(delayed, 1 + _below(rng, cfg.max_disorder_ms, n_ev), 0)
        # release time t(k) + delay; on a tie, the less delayed slot first, then slot order
        rel = (event_time_ms(cfg, slots) - cfg.base_time_ms) + delay
        max_rel = int(event_time_ms(cfg, max(n_ev - 1, 0))) - cfg.base_time_ms + cfg.max_disorder_ms
        if (max_rel + 1) * (cfg.max_disorder_ms + 1) < 2**62:
            order = np.argsort(rel * (cfg.max_disorder_ms + 1) + delay, kind="stable")
        else:
            order = np.lexsort((delay, rel))
        ev = ev[order]
    return ev


def disorder_bound_ms(config: Config) -> int:
    """Guaranteed bound on lateness (see module docstring)."""
    g, n_ev = config.out_of_order_group_size, config.events
    span = 0
    if g > 1 and n_ev >= g:
        starts = np.arange(n_ev // g, dtype=np.int64) * g
        span = int(np.max(event_time_ms(config, starts + g - 1) - event_time_ms(config, starts)))
    if not _delays_active(config):
        return span
    return config.max_disorder_ms + 2 * span


# --- public API -------------------------------------------------------------

def _frame(cols: dict[str, np.ndarray], names: list[str], take: np.ndarray | None) -> pd.DataFrame:
    data = {}
    for c in names:
        a = cols[c]
        if take is not None:
            a = a[take]
        data[c] = a if c in _STR_COLUMNS else a.astype(np.int64, copy=False)
    return pd.DataFrame(data, columns=names, copy=False)


def generate(config: Config) -> dict[str, pd.DataFrame]:
    """{'person': ..., 'auction': ..., 'bid': ...}, each sorted by arrival order
    (event number after disorder)."""
    cfg, n_ev = config, config.events
    rngs = _rngs(cfg.seed)
    p_n = _kind_event_numbers(n_ev, 0, PERSON_PROPORTION)
    a_n = _kind_event_numbers(n_ev, PERSON_PROPORTION, PERSON_PROPORTION + AUCTION_PROPORTION)
    b_n = _kind_event_numbers(n_ev, PERSON_PROPORTION + AUCTION_PROPORTION, PROPORTION_DENOMINATOR)
    persons = _persons(cfg, rngs["person"], p_n)
    auctions = _auctions(cfg, rngs["auction"], a_n)
    bids = _bids(cfg, rngs["bid"], _channel_pool(rngs["channels"]), b_n)

    take = {"person": None, "auction": None, "bid": None}
    arrival = arrival_event_numbers(cfg)
    if arrival is not None:
        epoch, rem = np.divmod(arrival, PROPORTION_DENOMINATOR)
        is_p = rem < PERSON_PROPORTION
        is_a = ~is_p & (rem < PERSON_PROPORTION + AUCTION_PROPORTION)
        is_b = ~is_p & ~is_a
        take["person"] = epoch[is_p]
        take["auction"] = epoch[is_a] * AUCTION_PROPORTION + rem[is_a] - PERSON_PROPORTION
        take["bid"] = (epoch[is_b] * BID_PROPORTION + rem[is_b]
                       - PERSON_PROPORTION - AUCTION_PROPORTION)
    return {
        "person": _frame(persons, PERSON_COLUMNS, take["person"]),
        "auction": _frame(auctions, AUCTION_COLUMNS, take["auction"]),
        "bid": _frame(bids, BID_COLUMNS, take["bid"]),
    }


def write_bids(bids: pd.DataFrame, folder: str, files: int, fmt: str = "csv") -> list[str]:
    """Writes the bids in arrival order into `files` files part-0000.csv ... (CSV with a
    header line, or 'parquet'), one contiguous slice each, and sets their modification
    times one second apart in order (os.utime) so that Spark's file source with
    maxFilesPerTrigger=1 reads them in order. Returns the paths.

    Each file is written under a hidden temporary name ('.part-....tmp', ignored by
    Spark) and then renamed, so a streaming reader never sees a partial file.  The
    folder is created if needed; it must not already contain 'part-*' files.  The
    modification times are whole seconds in the past: now - files + i for file i.
    """
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    if files < 1:
        raise ValueError("files must be >= 1")
    if fmt not in ("csv", "parquet"):
        raise ValueError("fmt must be 'csv' or 'parquet'")
    os.makedirs(folder, exist_ok=True)
    stale = sorted(f for f in os.listdir(folder) if f.startswith("part-"))
    if stale:
        raise FileExistsError(f"{folder} already contains {stale[0]} (and {len(stale) - 1} more)")
    table = pa.Table.from_pandas(bids, preserve_index=False)
    rows = table.num_rows
    first_mtime = int(time.time()) - files
    paths = []
    for i in range(files):
        lo, hi = (i * rows) // files, ((i + 1) * rows) // files
        part = table.slice(lo, hi - lo)
        name = f"part-{i:04d}.{fmt}"
        path = os.path.join(folder, name)
        tmp = os.path.join(folder, f".{name}.tmp")
        if fmt == "csv":
            pacsv.write_csv(part, tmp)
        else:
            pq.write_table(part, tmp)
        os.replace(tmp, path)
        os.utime(path, (first_mtime + i, first_mtime + i))
        paths.append(path)
    return paths


# --- Kafka --------------------------------------------------------------------

# nexmark-flink's record layout: an event is {"event_type": 0 | 1 | 2, "person" | "auction" | "bid":
# {...}} with the fields in camelCase and times as "yyyy-MM-dd HH:mm:ss.SSS" (UTC here), what its
# Flink SQL tables read; the kinds' other fields are absent (null)
EVENT_TYPES = {"person": 0, "auction": 1, "bid": 2}
KAFKA_TIME = {"timestampFormat": "yyyy-MM-dd HH:mm:ss.SSS", "timeZone": "UTC"}
_KAFKA_NAMES = {"date_time": "dateTime", "item_name": "itemName", "initial_bid": "initialBid",
                "email_address": "emailAddress", "credit_card": "creditCard"}
_KAFKA_TIMES = {"date_time", "expires"}


def arrival_positions(config: Config) -> dict[str, np.ndarray]:
    """For each kind, the position in the arrival order of all events (0-based) of each row of
    ``generate(config)[kind]``: the three frames merged by these positions are the whole stream."""
    arrival = arrival_event_numbers(config)
    n = np.arange(config.events, dtype=np.int64) if arrival is None else arrival
    rem = n % PROPORTION_DENOMINATOR
    position = np.arange(config.events, dtype=np.int64)
    auction = (rem >= PERSON_PROPORTION) & (rem < PERSON_PROPORTION + AUCTION_PROPORTION)
    return {
        "person": position[rem < PERSON_PROPORTION],
        "auction": position[auction],
        "bid": position[rem >= PERSON_PROPORTION + AUCTION_PROPORTION],
    }


def write_kafka(spark, config: Config, frames: dict[str, pd.DataFrame], bootstrap: str, topic: str) -> int:
    """Writes ``frames`` (``generate(config)``) to the Kafka topic ``topic`` at ``bootstrap`` in
    arrival order, one JSON record per event in nexmark-flink's layout (``EVENT_TYPES``; times in
    ``KAFKA_TIME``), without a key. One task writes them all, so that a topic of one partition
    holds the arrival order. ``spark`` is a session with Spark's Kafka connector on its class path
    (``spark.jars``); returns the number of records."""
    from pyspark.sql import functions as F

    positions = arrival_positions(config)
    records = None
    for kind, event_type in EVENT_TYPES.items():
        frame = frames[kind].assign(position=positions[kind])
        rows = spark.createDataFrame(frame)
        fields = [
            (F.timestamp_millis(c) if c in _KAFKA_TIMES else F.col(c)).alias(_KAFKA_NAMES.get(c, c))
            for c in frames[kind].columns
        ]
        event = F.struct(F.lit(event_type).alias("event_type"), F.struct(*fields).alias(kind))
        rows = rows.select("position", F.to_json(event, KAFKA_TIME).alias("value"))
        records = rows if records is None else records.unionByName(rows)
    (records.repartition(1).sortWithinPartitions("position").select("value")
     .write.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("topic", topic).save())
    return sum(len(frame) for frame in frames.values())
