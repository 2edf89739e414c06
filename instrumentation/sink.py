"""Where recorded accesses go: the ``Sink`` protocol, and ``DatasetInfo``, what the hooks know of one array.

A leaf module (no import from this package) so that every producer of accesses (the h5py / zarr hooks through the
hub, the libhdf5 records of ``interpose.LibraryCapture``) and every receiver of them (the tracer
``tracer.Tracer``, the converter process and the salvage of a killed child's records, ``convertsink.ConvertedSink``)
meet here, without one reaching into another's attributes.
"""
from __future__ import annotations

from collections import deque
from typing import Protocol


class DatasetInfo:
    """What the hooks know of one array, computed once (see field notes: 20 µs per query).

    ``template`` is the DatasetRecord with a placeholder id; ``shape`` follows
    resizes (None: an HDF5 NULL dataspace, which holds no data). Tracers number
    datasets themselves and look them up by ``key``.
    """

    __slots__ = ("template", "key", "shape", "itemsize", "dtype", "mpio", "__weakref__")

    def __init__(self, template, dtype):
        self.template = template
        self.key = template.key
        self.shape = tuple(template.shape)
        self.itemsize = template.itemsize
        self.dtype = dtype
        self.mpio = template.driver == "mpio"  # only then can a transfer be collective


class Sink(Protocol):
    """A receiver of accesses in bulk: one trace being written (its dataset ids, clock and rank).

    ``spans``: the h5py calls (key, t0, t1) it recorded and not yet handed over, kept where libhdf5 is seen too
    (a libhdf5 call inside one of them is that call: dropped), else None. ``origin``: its clock origin on
    ``time.perf_counter``'s clock."""

    rank: int
    spans: "deque | None"

    @property
    def origin(self) -> float: ...

    def register(self, info: DatasetInfo, created: bool = False, below: bool = False) -> int:
        """This trace's id of ``info``'s array, numbering it if it is new here (``created``: made now;
        ``below``: seen by the libhdf5 interposer)."""

    def resize(self, info: DatasetInfo, t0: float) -> None:
        """``info``'s extent became ``info.shape`` at ``t0`` (perf_counter clock)."""

    def columns(self, cols) -> None:
        """Accesses already as ``AccessColumns`` (this sink's ids and clock), written in bulk."""


__all__ = ["DatasetInfo", "Sink"]
