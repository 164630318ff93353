"""The ``flagcore`` commands (serve, copy, import, export, explain), over the server
(`flagcore_http`) and the stores, which they open through `flagcore_cli.stores`."""
