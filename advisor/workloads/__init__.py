"""Small bundled programs that ``ioadvisor demo`` traces: ordinary h5py/zarr code, nothing ioadvisor-specific."""
