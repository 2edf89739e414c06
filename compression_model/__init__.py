"""Compression model: data sample + codec + error bound -> ratio, throughput, 95% intervals.

Pure computation on arrays; h5py/zarr/hdf5plugin are imported inside the functions
that need the real filters (``zarr_sz3`` is the zarr codec itself and imports zarr).
Entry point: ``compression_model.estimate.estimate``.
"""
