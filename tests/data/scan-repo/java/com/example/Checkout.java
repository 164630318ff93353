package com.example;

class Checkout {
    boolean run(Unleash unleash, Client client) {
        boolean fast = unleash.isEnabled("fast-payments");
        Variant v = unleash.getVariant("checkout-colour");
        return fast && client.getBooleanValue("dark-mode", false);
    }
}
