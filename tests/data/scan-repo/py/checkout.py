from UnleashClient import UnleashClient
from openfeature import api

client = UnleashClient("http://localhost:4242/api", "checkout")
BANNER = "summer-banner"


def checkout(user_id: str) -> str:
    if client.is_enabled("new-checkout", {"userId": user_id}):
        variant = client.get_variant('checkout-colour', {"userId": user_id})
        return variant["name"]
    flag = api.get_client().get_boolean_value("fast-payments", False)
    return "old" if flag else client.is_enabled(f"dynamic-{user_id}")
