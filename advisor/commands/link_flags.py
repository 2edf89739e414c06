"""``ioadvisor link-flags``: what to add to a program's link line so that ``ioadvisor run`` sees its HDF5 calls
when its libhdf5 is linked in statically (Debian's ``h5cc`` default), where the LD_PRELOAD interposer cannot
reach: ``h5cc -o prog prog.c $(ioadvisor link-flags)``. The flags send the program's calls of the hooked
functions through the link-time wrapper (``-Wl,--wrap=NAME``, as Darshan does), an object built at install
time (instrumentation/linkage.py).
"""
from __future__ import annotations

import shlex

from instrumentation.errors import InputError


def register(sub) -> None:
    p = sub.add_parser(
        "link-flags", help="print the link flags that make a statically linked HDF5 program traceable",
        description="Print what to add to a program's link line (after its own objects) so that `ioadvisor run` "
                    "records its H5Dread/H5Dwrite calls although its libhdf5 is linked in statically: "
                    "h5cc -o prog prog.c $(ioadvisor link-flags). Run outside `ioadvisor run`, such a program "
                    "records nothing.",
    )
    p.set_defaults(func=run)


def run(args) -> int:
    from instrumentation import linkage

    wrapper = linkage.wrapper_object()
    if wrapper is None:
        raise InputError("the link-time wrapper was not built (no C compiler when ioadvisor was installed): "
                                "install ioadvisor again where `cc` works")
    print(" ".join(shlex.quote(flag) for flag in linkage.link_flags(wrapper)))
    return 0
