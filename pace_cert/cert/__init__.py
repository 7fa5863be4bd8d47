"""The certificate: its model, how it is built, its claims, and the independent verify."""
