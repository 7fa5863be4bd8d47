"""The realistic-model suite (raw features, models users train)."""
