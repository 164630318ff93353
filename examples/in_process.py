"""Evaluate Unleash flags in-process with flagcore: no server, no network.

Run: .venv/bin/python examples/in_process.py
"""

from __future__ import annotations

from collections.abc import Mapping

import flagcore

# What an Unleash server answers on /api/client/features (here written by hand).
PAYLOAD = {
    "version": 2,
    "features": [
        {
            "name": "new-checkout",
            "enabled": True,
            "strategies": [
                {
                    "name": "flexibleRollout",
                    "parameters": {
                        "rollout": "25",
                        "stickiness": "userId",
                        "groupId": "new-checkout",
                    },
                    "constraints": [
                        {"contextName": "country", "operator": "IN", "values": ["NO", "SE"]},
                    ],
                    "segments": [1],
                }
            ],
            "variants": [
                {
                    "name": "blue",
                    "weight": 500,
                    "stickiness": "userId",
                    "payload": {"type": "string", "value": "#00f"},
                },
                {"name": "green", "weight": 500, "stickiness": "userId"},
            ],
        },
        {
            "name": "tenant-beta",
            "enabled": True,
            "strategies": [{"name": "tenant", "parameters": {"tenants": "acme,globex"}}],
        },
    ],
    "segments": [
        {
            "id": 1,
            "name": "app-users",
            "constraints": [
                {"contextName": "appVersion", "operator": "SEMVER_GTE", "value": "2.0.0"},
            ],
        },
    ],
}


def tenant_strategy(parameters: Mapping[str, str], context: flagcore.Context) -> bool:
    """A custom strategy: on for the tenants listed in its parameters."""
    return context.properties.get("tenant") in parameters["tenants"].split(",")


def main() -> None:
    engine = flagcore.Engine.from_client_features(
        PAYLOAD, custom_strategies={"tenant": tenant_strategy}
    )
    on = 0
    for user in range(1000):
        context = flagcore.Context(
            user_id=str(user), properties={"country": "NO", "appVersion": "2.1.0"}
        )
        on += engine.is_enabled("new-checkout", context)
    print(f"new-checkout is on for {on} of 1000 Norwegian users on app 2.1.0 (rollout 25%)")

    for user in ("1", "2", "3", "4"):
        variant = engine.get_variant(
            "new-checkout", {"userId": user, "properties": {"country": "SE", "appVersion": "2.0.0"}}
        )
        print(f"user {user}: variant {variant.name!r}, payload {variant.payload}")
    print(
        "tenant-beta for acme:",
        engine.is_enabled("tenant-beta", {"properties": {"tenant": "acme"}}),
    )
    print("unknown flag, default True:", engine.is_enabled("no-such-flag", default=True))


if __name__ == "__main__":
    main()
