"""Advice records and their rendering, under their historical import path.

The types live in ``advisor.results``, their text in ``advisor.render.text`` and their code in
``advisor.render.code``; ``from advisor.advice import X`` keeps working for each of them.
"""
from advisor.render.code import codec_of, hdf5_codec_source, resolved_bound, zarr_codec_source
from advisor.render.text import explain, format_table, pitfalls
from advisor.results import Advice, DatasetAdvice, MinorDataset, NotAdvised, Recommendation, WhatIf
from advisor.terms import TERM_MEANING

__all__ = ["Advice", "DatasetAdvice", "MinorDataset", "NotAdvised", "Recommendation", "TERM_MEANING", "WhatIf",
           "codec_of", "explain", "format_table", "hdf5_codec_source", "pitfalls", "resolved_bound",
           "zarr_codec_source"]
