"""The evaluation pipeline: one design point in, every metric out.

``evaluate.py`` holds the ordered ``STAGES`` and ``evaluate``; ``context.py`` what the stages
share; ``stages/`` one module per stage, each wiring knobs into the physics of ``dse.hardware``,
``dse.mapping`` and ``dse.performance``; ``sweep.py`` one-knob sweeps over ``evaluate``.
"""
