"""A seeded, realistic Unleash workload: a client-features payload and evaluation contexts.

`build_payload` makes Unleash's ``/api/client/features`` JSON (as a dict): mostly
``flexibleRollout`` strategies with 1–3 constraints each over many operators, shared
segments, feature and strategy variants (some with payloads and overrides), ~10% disabled
flags and a few ``userWithId`` / ``default`` strategies. `build_contexts` makes contexts whose
values make those constraints match sometimes and fail sometimes.

Everything is drawn from ``random.Random(seed)``, so the same seed gives the same workload.
Nothing in it depends on chance at evaluation time: no ``random`` stickiness, no
``gradualRolloutRandom``, every context has a ``userId`` and every property that a variant
stickiness names, and every context carries ``currentTime``.

Run it to see what a workload holds: ``python benchmarks/workload.py --flags 300``.
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import json
import random
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "Workload",
    "build_contexts",
    "build_payload",
    "build_workload",
    "describe",
    "flag_names",
]

JSON = dict[str, Any]

# ---------------------------------------------------------------------------------------------
# Vocabularies shared by flags and contexts, so that constraints can match.

USER_IDS = 2000  # userId is str(1..USER_IDS)
TENANTS = 150  # tenant is "tenant-0".."tenant-149"
# fmt: off
COUNTRIES = (
    "US", "CA", "MX", "BR", "AR", "GB", "IE", "FR", "DE", "NL", "BE", "ES", "PT", "IT", "CH",
    "AT", "SE", "NO", "DK", "FI", "PL", "CZ", "IN", "JP", "KR", "CN", "AU", "NZ", "ZA", "NG",
)
# fmt: on
PLANS = ("free", "starter", "pro", "team", "enterprise")
ENVIRONMENTS = ("production", "staging", "development", "qa")
APPS = ("web", "ios", "android", "backend-api", "batch-worker", "admin-console")
FIRST_NAMES = ("anna", "ben", "chloe", "david", "emma", "farid", "grace", "hiro", "ines", "jon")
LAST_NAMES = ("smith", "garcia", "mueller", "rossi", "tanaka", "kowalski", "nguyen", "silva")
DOMAINS = ("example.com", "acme.io", "corp.example.org", "gmail.com", "mail.co.uk", "startup.dev")
# Contexts get addresses inside these networks; IN_CIDR constraints name parts of them.
IPV4_NETWORKS = ("10.0", "10.1", "172.16", "192.168", "203.0", "198.51", "81.2", "8.8")
IPV6_PREFIX = "2001:db8"
DEVICE_KINDS = ("phone", "tablet", "desktop", "tv")

# Property names every context has (variant stickiness may use those marked sticky).
STICKY_PROPERTIES = ("deviceId", "tenant")
STICKINESS = ("default", "default", "userId", "sessionId", "deviceId", "tenant")

REGEXES: dict[str, tuple[str, ...]] = {
    "email": (
        r"^[a-z]+\.[a-z]+\d*@acme\.io$",
        r"@(gmail|startup)\.",
        r"^(anna|ben|chloe)\.",
        r"\.co\.uk$",
    ),
    "userId": (r"^1\d{2}$", r"^\d{1,2}$", r"[05]$", r"^(12|13|14)\d+$"),
    "tenant": (r"-1\d$", r"^tenant-[0-4]\d?$", r"-(7|8|9)\d*$"),
    "appVersion": (r"^2\.\d+\.\d+$", r"-(beta|rc)\.\d+$", r"^[01]\."),
    "country": (r"^(DE|FR|NL|BE)$", r"^[A-C]"),
    "deviceKind": (r"^(phone|tablet)$", r"t"),
}

BASE_TIME = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
TIME_SPAN_DAYS = 3 * 365  # currentTime lies in 2024-01-01 .. 2026-12-31
SIGNUP_START = dt.datetime(2016, 1, 1, tzinfo=dt.UTC)
SIGNUP_SPAN_DAYS = 10 * 365


@dataclass(frozen=True)
class Workload:
    """A payload and the contexts to evaluate it with."""

    payload: JSON
    contexts: list[JSON]
    seed: int


# ---------------------------------------------------------------------------------------------
# Small value generators.


def _semver(rng: random.Random) -> str:
    version = f"{rng.choice((0, 1, 1, 2, 2, 2, 3, 4))}.{rng.randint(0, 20)}.{rng.randint(0, 30)}"
    roll = rng.random()
    if roll < 0.08:
        version += f"-beta.{rng.randint(1, 9)}"
    elif roll < 0.14:
        version += f"-rc.{rng.randint(1, 4)}"
    elif roll < 0.16:
        version += "-alpha"
    return version


def _rfc3339(rng: random.Random, moment: dt.datetime) -> str:
    """``moment`` in one of the RFC 3339 spellings Unleash accepts."""
    style = rng.random()
    if style < 0.6:
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
    if style < 0.85:
        return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
    offset = dt.timezone(dt.timedelta(hours=rng.choice((-5, 1, 2, 9))))
    return moment.astimezone(offset).isoformat(timespec="seconds")


def _moment(rng: random.Random, start: dt.datetime, span_days: int) -> dt.datetime:
    return start + dt.timedelta(
        seconds=rng.randint(0, span_days * 86400), milliseconds=rng.randint(0, 999)
    )


def _padded(rng: random.Random, chosen: Sequence[str], size: int, filler: str) -> list[str]:
    """``chosen`` plus made-up values (that no context has) up to ``size`` values, shuffled."""
    values = list(chosen)
    values.extend(f"{filler}-{i}" for i in range(max(0, size - len(values))))
    rng.shuffle(values)
    return values


def _weights(rng: random.Random, count: int) -> list[int]:
    """``count`` positive weights that sum to 1000."""
    cuts = sorted(rng.sample(range(1, 1000), count - 1))
    return [b - a for a, b in zip([0, *cuts], [*cuts, 1000], strict=True)]


# ---------------------------------------------------------------------------------------------
# Constraints: each maker returns (contextName, operator, values or value, may fold case).

ConstraintMaker = Callable[[random.Random], JSON]


def _list(context_name: str, operator: str, values: list[str]) -> JSON:
    return {"contextName": context_name, "operator": operator, "values": values}


def _single(rng: random.Random, context_name: str, operator: str, value: str) -> JSON:
    constraint = {"contextName": context_name, "operator": operator, "value": value}
    if rng.random() < 0.5:
        constraint["values"] = []  # Unleash's API sends both keys for single-value operators
    return constraint


def _in_user_ids(rng: random.Random) -> JSON:
    size = rng.randint(10, 100)
    values = [str(n) for n in rng.sample(range(1, USER_IDS + 1), size)]
    return _list("userId", rng.choice(("IN", "NOT_IN")), values)


def _in_tenants(rng: random.Random) -> JSON:
    size = rng.randint(10, 100)
    values = [f"tenant-{n}" for n in rng.sample(range(TENANTS), size)]
    return _list("tenant", rng.choice(("IN", "IN", "NOT_IN")), values)


def _in_countries(rng: random.Random) -> JSON:
    chosen = rng.sample(COUNTRIES, rng.randint(2, 12))
    values = _padded(rng, chosen, rng.randint(10, 40), "XX")
    return _list("country", rng.choice(("IN", "NOT_IN")), values)


def _in_plans(rng: random.Random) -> JSON:
    values = rng.sample(PLANS, rng.randint(1, 3))
    if rng.random() < 0.5:
        values = _padded(rng, values, rng.randint(10, 30), "legacy-plan")
    return _list("plan", rng.choice(("IN", "NOT_IN")), values)


def _in_environment(rng: random.Random) -> JSON:
    return _list("environment", "IN", rng.sample(ENVIRONMENTS, rng.randint(1, 2)))


def _in_app(rng: random.Random) -> JSON:
    return _list("appName", rng.choice(("IN", "NOT_IN")), rng.sample(APPS, rng.randint(1, 3)))


def _beta_tester(rng: random.Random) -> JSON:
    return _list("betaTester", "IN", ["true"])


def _str_email(rng: random.Random) -> JSON:
    operator = rng.choice(("STR_ENDS_WITH", "STR_STARTS_WITH", "STR_CONTAINS"))
    if operator == "STR_ENDS_WITH":
        values = [f"@{d}" if rng.random() < 0.5 else d for d in rng.sample(DOMAINS, 2)]
    elif operator == "STR_STARTS_WITH":
        values = rng.sample(FIRST_NAMES, rng.randint(1, 4))
    else:
        values = rng.sample([*LAST_NAMES, "acme", ".co", "mail", "7@"], rng.randint(1, 3))
    if rng.random() < 0.3:
        values = [v.upper() for v in values]  # only matches when case-insensitive
    constraint = _list("email", operator, values)
    constraint["caseInsensitive"] = rng.random() < 0.5
    return constraint


def _str_other(rng: random.Random) -> JSON:
    field, operator, values = rng.choice(
        (
            ("appName", "STR_STARTS_WITH", ["web", "i", "and"]),
            ("tenant", "STR_ENDS_WITH", ["-1", "-7", "9"]),
            ("appVersion", "STR_CONTAINS", ["-beta", "-rc"]),
            ("deviceKind", "STR_CONTAINS", ["TAB", "Phone"]),
            ("userId", "STR_STARTS_WITH", ["1", "2"]),
        )
    )
    constraint = _list(field, operator, values)
    constraint["caseInsensitive"] = rng.random() < 0.4
    return constraint


_NUM_OPERATORS = ("NUM_EQ", "NUM_GT", "NUM_GTE", "NUM_LT", "NUM_LTE")


def _num(rng: random.Random) -> JSON:
    field = rng.choice(("age", "age", "cartValue", "userId"))
    if field == "age":
        value = str(rng.randint(18, 70))
    elif field == "cartValue":
        value = rng.choice((str(rng.randint(10, 400)), f"{rng.uniform(5, 500):.2f}"))
    else:
        value = str(rng.randint(1, USER_IDS))
    operator = rng.choice(_NUM_OPERATORS if field != "cartValue" else _NUM_OPERATORS[1:])
    return _single(rng, field, operator, value)


def _date(rng: random.Random) -> JSON:
    if rng.random() < 0.6:
        field, moment = "currentTime", _moment(rng, BASE_TIME, TIME_SPAN_DAYS)
    else:
        field, moment = "signupDate", _moment(rng, SIGNUP_START, SIGNUP_SPAN_DAYS)
    operator = rng.choice(("DATE_AFTER", "DATE_BEFORE"))
    return _single(rng, field, operator, _rfc3339(rng, moment))


def _semver_constraint(rng: random.Random) -> JSON:
    operator = rng.choice(("SEMVER_EQ", "SEMVER_GT", "SEMVER_GTE", "SEMVER_LT", "SEMVER_LTE"))
    return _single(rng, "appVersion", operator, _semver(rng))


def _regex(rng: random.Random) -> JSON:
    field = rng.choice(tuple(REGEXES))
    constraint = _single(rng, field, "REGEX", rng.choice(REGEXES[field]))
    constraint["caseInsensitive"] = rng.random() < 0.3
    return constraint


def _cidr(rng: random.Random) -> JSON:
    values = []
    for _ in range(rng.randint(1, 4)):
        prefix = rng.choice(IPV4_NETWORKS)
        kind = rng.random()
        if kind < 0.3:
            values.append(f"{prefix}.0.0/16")
        elif kind < 0.6:
            values.append(f"{prefix}.{rng.randint(0, 3)}.0/24")
        elif kind < 0.75:
            values.append(f"{prefix.split('.')[0]}.0.0.0/8")
        elif kind < 0.9:
            values.append(f"{prefix}.{rng.randint(0, 3)}.{rng.randint(1, 254)}")
        else:
            values.append(f"{IPV6_PREFIX}:{rng.randint(0, 3):x}::/48")
    return _list("remoteAddress", "IN_CIDR", values)


CONSTRAINT_MAKERS: tuple[tuple[ConstraintMaker, int], ...] = (
    (_in_user_ids, 10),
    (_in_tenants, 10),
    (_in_countries, 8),
    (_in_plans, 6),
    (_in_environment, 6),
    (_in_app, 4),
    (_beta_tester, 2),
    (_str_email, 8),
    (_str_other, 5),
    (_num, 9),
    (_date, 8),
    (_semver_constraint, 8),
    (_regex, 7),
    (_cidr, 6),
)
_MAKERS = [maker for maker, _ in CONSTRAINT_MAKERS]
_MAKER_WEIGHTS = [weight for _, weight in CONSTRAINT_MAKERS]


def _constraint(rng: random.Random) -> JSON:
    constraint = rng.choices(_MAKERS, _MAKER_WEIGHTS)[0](rng)
    constraint["inverted"] = rng.random() < 0.15
    constraint.setdefault("caseInsensitive", False)
    return constraint


def _constraints(rng: random.Random, weights: Sequence[int] = (5, 3, 2)) -> list[JSON]:
    """1, 2 or 3 constraints (more often fewer), with these relative weights."""
    count = rng.choices(range(1, len(weights) + 1), weights)[0]
    return [_constraint(rng) for _ in range(count)]


# ---------------------------------------------------------------------------------------------
# Variants, strategies, flags, segments.


def _payload(rng: random.Random, name: str) -> JSON:
    kind = rng.choice(("string", "json", "csv", "number"))
    if kind == "json":
        value = json.dumps({"variant": name, "color": rng.choice(("red", "blue", "green"))})
    elif kind == "csv":
        value = ",".join(rng.sample(("a", "b", "c", "d", "e"), 3))
    elif kind == "number":
        value = str(rng.randint(1, 500))
    else:
        value = f"{name}-value"
    return {"type": kind, "value": value}


def _variants(
    rng: random.Random, count: int, stickiness: str, *, overrides: bool, payloads: float
) -> list[JSON]:
    variants = []
    for index, weight in enumerate(_weights(rng, count)):
        name = rng.choice(("control", "treatment", "blue", "green", "red", "v"))
        name = f"{name}-{index}"
        variant: JSON = {
            "name": name,
            "weight": weight,
            "weightType": "variable",
            "stickiness": stickiness,
        }
        if rng.random() < payloads:
            variant["payload"] = _payload(rng, name)
        variants.append(variant)
    if overrides:
        target = rng.choice(variants)
        if rng.random() < 0.6:
            values = [str(n) for n in rng.sample(range(1, USER_IDS + 1), rng.randint(5, 40))]
            target["overrides"] = [{"contextName": "userId", "values": values}]
        else:
            values = [f"tenant-{n}" for n in rng.sample(range(TENANTS), rng.randint(2, 10))]
            target["overrides"] = [{"contextName": "tenant", "values": values}]
    return variants


def _rollout_percentage(rng: random.Random) -> str:
    if rng.random() < 0.7:
        return str(rng.choice((0, 1, 5, 10, 20, 25, 33, 50, 50, 75, 90, 100, 100)))
    return str(rng.randint(1, 99))


def _strategy(rng: random.Random, flag: str, segment_ids: Sequence[int]) -> JSON:
    roll = rng.random()
    strategy: JSON
    if roll < 0.06:
        user_ids = rng.sample(range(1, USER_IDS + 1), rng.randint(10, 60))
        strategy = {"name": "userWithId", "parameters": {"userIds": ",".join(map(str, user_ids))}}
    elif roll < 0.11:
        strategy = {"name": "default", "parameters": {}}
    else:
        stickiness = rng.choice(STICKINESS)
        group_id = flag if rng.random() < 0.85 else f"experiment-{rng.randint(0, 9)}"
        strategy = {
            "name": "flexibleRollout",
            "parameters": {
                "rollout": _rollout_percentage(rng),
                "stickiness": stickiness,
                "groupId": group_id,
            },
        }
        if rng.random() < 0.15:
            strategy["variants"] = _variants(
                rng, rng.randint(2, 3), stickiness, overrides=False, payloads=0.8
            )
    strategy["constraints"] = _constraints(rng)
    if segment_ids and rng.random() < 0.25:
        strategy["segments"] = rng.sample(list(segment_ids), rng.randint(1, 2))
    return strategy


_AREAS = ("checkout", "search", "onboarding", "billing", "profile", "feed", "admin", "payments")
_FLAG_TYPES = ("release", "release", "experiment", "operational", "kill-switch", "permission")


def _flag(rng: random.Random, index: int, segment_ids: Sequence[int]) -> JSON:
    name = f"{rng.choice(_AREAS)}.{rng.choice(('new', 'fast', 'v2', 'beta', 'ab'))}-{index:05d}"
    count = rng.choices((0, 1, 2, 3), (2, 60, 28, 10))[0]
    flag: JSON = {
        "name": name,
        "description": f"Benchmark flag {index}",
        "type": rng.choice(_FLAG_TYPES),
        "project": "default",
        "enabled": rng.random() >= 0.10,
        "stale": False,
        "impressionData": rng.random() < 0.05,
        "strategies": [_strategy(rng, name, segment_ids) for _ in range(count)],
        "variants": [],
    }
    if rng.random() < 0.4:
        flag["variants"] = _variants(
            rng,
            rng.randint(2, 4),
            rng.choice(STICKINESS),
            overrides=rng.random() < 0.3,
            payloads=0.6,
        )
    return flag


def _segment(rng: random.Random, segment_id: int) -> JSON:
    return {
        "id": segment_id,
        "name": f"segment-{segment_id}",
        "constraints": _constraints(rng, (2, 1)),
    }


def build_payload(flags: int = 300, seed: int = 1) -> JSON:
    """Unleash's client-features payload with ``flags`` flags and about flags/15 segments."""
    rng = random.Random(f"flags:{seed}")
    segment_ids = list(range(1, max(5, flags // 15) + 1))
    return {
        "version": 2,
        "features": [_flag(rng, index, segment_ids) for index in range(flags)],
        "segments": [_segment(rng, segment_id) for segment_id in segment_ids],
    }


# ---------------------------------------------------------------------------------------------
# Contexts.


def _address(rng: random.Random) -> str:
    if rng.random() < 0.1:
        return f"{IPV6_PREFIX}:{rng.randint(0, 5):x}::{rng.randint(1, 0xFFFF):x}"
    prefix = rng.choice(IPV4_NETWORKS)
    return f"{prefix}.{rng.randint(0, 5)}.{rng.randint(1, 254)}"


def _email(rng: random.Random) -> str:
    email = f"{rng.choice(FIRST_NAMES)}.{rng.choice(LAST_NAMES)}{rng.randint(1, 99)}"
    email += f"@{rng.choice(DOMAINS)}"
    return email.title() if rng.random() < 0.15 else email


def _context(rng: random.Random) -> JSON:
    properties = {
        "deviceId": f"d-{rng.getrandbits(32):08x}",
        "tenant": f"tenant-{rng.randrange(TENANTS)}",
        "email": _email(rng),
        "country": rng.choice(COUNTRIES),
        "appVersion": _semver(rng),
        "cartValue": f"{rng.uniform(0, 600):.2f}",
        "signupDate": _rfc3339(rng, _moment(rng, SIGNUP_START, SIGNUP_SPAN_DAYS)),
        "betaTester": rng.choice(("true", "false", "false", "false")),
        "deviceKind": rng.choice(DEVICE_KINDS),
    }
    # Some fields are sometimes missing, which matters for NOT_IN and inverted constraints.
    if rng.random() < 0.85:
        properties["age"] = str(rng.randint(13, 90))
    if rng.random() < 0.9:
        properties["plan"] = rng.choice(PLANS)
    return {
        "userId": str(rng.randint(1, USER_IDS)),
        "sessionId": f"{rng.getrandbits(48):012x}",
        "remoteAddress": _address(rng),
        "appName": rng.choice(APPS),
        "environment": rng.choices(ENVIRONMENTS, (6, 2, 1, 1))[0],
        "currentTime": _rfc3339(rng, _moment(rng, BASE_TIME, TIME_SPAN_DAYS)),
        "properties": properties,
    }


def build_contexts(count: int = 5000, seed: int = 1) -> list[JSON]:
    """``count`` camelCase contexts (as Unleash SDKs send them)."""
    rng = random.Random(f"contexts:{seed}")
    return [_context(rng) for _ in range(count)]


def build_workload(flags: int = 300, contexts: int = 5000, seed: int = 1) -> Workload:
    return Workload(build_payload(flags, seed), build_contexts(contexts, seed), seed)


def flag_names(payload: JSON) -> list[str]:
    return [feature["name"] for feature in payload["features"]]


# ---------------------------------------------------------------------------------------------


def describe(payload: JSON) -> str:
    """A few counts that show what a payload holds."""
    features = payload["features"]
    strategies = [s for f in features for s in f["strategies"]]
    constraints = [c for s in strategies for c in s.get("constraints", [])]
    constraints += [c for seg in payload["segments"] for c in seg["constraints"]]
    operators = collections.Counter(c["operator"] for c in constraints)
    lines = [
        f"flags: {len(features)} ({sum(not f['enabled'] for f in features)} disabled, "
        f"{sum(bool(f['variants']) for f in features)} with variants)",
        f"strategies: {len(strategies)} "
        + str(dict(collections.Counter(s["name"] for s in strategies))),
        f"  with segments: {sum(bool(s.get('segments')) for s in strategies)}, "
        f"with variants: {sum(bool(s.get('variants')) for s in strategies)}",
        f"segments: {len(payload['segments'])}",
        f"constraints: {len(constraints)} "
        f"({sum(c['inverted'] for c in constraints)} inverted, "
        f"{sum(c['caseInsensitive'] for c in constraints)} case-insensitive)",
        "operators: " + ", ".join(f"{op} {n}" for op, n in sorted(operators.items())),
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flags", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--dump", metavar="PATH", help="write the payload JSON to PATH")
    args = parser.parse_args(argv)
    payload = build_payload(args.flags, args.seed)
    print(describe(payload))
    if args.dump:
        with open(args.dump, "w", encoding="utf-8") as out:
            json.dump(payload, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
