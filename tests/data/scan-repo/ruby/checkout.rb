if UNLEASH.is_enabled? "new-checkout", context
  variant = UNLEASH.get_variant("checkout-colour", context)
end
dark = client.fetch_boolean_value(flag_key: "dark-mode", default_value: false)
