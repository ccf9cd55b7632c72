"""Model ids to ordered upstream targets: priority, weights, fallback and cooldown."""
