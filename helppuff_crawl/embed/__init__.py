"""Embedding: the models the crawler can embed with (`models`, from the shared contract) and the
batcher that fills their calls across pages (`batcher`)."""
