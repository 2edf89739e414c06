"""I/O cost model (Kang et al.): trace + candidate layout + system profile -> predicted seconds by term.

Pure computation on trace records: no h5py or zarr import here, so a trace from
another machine replays anywhere.
"""
from ._jitcache import invalidate_if_stale, kernels, uncached_kernels

invalidate_if_stale()

from .cost import TERMS, term_seconds
from .layout import Layout, LayoutError, parse_layout
from .parallel import contention_factor
from .predict import pick_dataset, predict
from .prediction import Prediction
from .profile import ProfileError, SystemProfile, load_profile, save_profile
from .variables import FEATURES, Variables, count_variables

__all__ = [
    "FEATURES", "TERMS", "Layout", "LayoutError", "Prediction", "ProfileError", "SystemProfile", "Variables",
    "contention_factor", "count_variables", "kernels", "load_profile", "parse_layout", "pick_dataset", "predict",
    "save_profile", "term_seconds", "uncached_kernels",
]
