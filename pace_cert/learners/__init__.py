"""Learners: the pool, pricing, boosting, refit, synthesis, merging shared splits."""
