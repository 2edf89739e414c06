"""Builds the C parts of the tracer with the machine's C compiler, both optional.

- The libhdf5 interposer (instrumentation/interposer/h5interpose.c): an LD_PRELOAD library, never
  imported; setuptools builds it as an extension so that wheels, sdists and editable installs carry and
  build it. Without it traces say that calls below Python are not captured.
- The h5py read hook (instrumentation/hotpath/hotpath.c): without it the same hook runs in Python,
  slower (docs/tracing-overhead.md).

Without a compiler the install still succeeds.
"""
from setuptools import Extension, setup

setup(ext_modules=[Extension(
    "instrumentation._hotpath",
    sources=["instrumentation/hotpath/hotpath.c"],
    extra_compile_args=["-O2"],
    optional=True,
), Extension(
    "instrumentation._h5interpose",
    sources=["instrumentation/interposer/h5interpose.c"],
    libraries=["dl", "pthread"],
    extra_compile_args=["-O2"],
    optional=True,
)])
