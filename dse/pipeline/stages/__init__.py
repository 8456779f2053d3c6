"""The pipeline's stages, one module each, in the order of ``dse.pipeline.evaluate.STAGES``."""
