"""The cost model: latency, energy, GPU baselines, AF serving, and the evaluation pipeline
that turns one design point into every metric (`dse.model.evaluate`)."""
