client.is_enabled("ignored-build")
