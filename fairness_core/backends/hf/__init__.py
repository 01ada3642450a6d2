"""The Hugging Face engine (``--backend=hf``): loading, seeded sampling, the decoding loop and its CPU kernels.

``engine.py`` loads a model and generates; ``sampling.py`` draws each sample
from its own random stream; ``kernel_choice.py``, ``cpu_kernels.py`` and
``cpu_features.py`` pick the fastest kernels a CPU runs; ``dtype_choice.py``
picks the dtype a CPU can run natively; ``model_checks.py`` and
``versions.py`` refuse what the engine cannot audit correctly.
"""
