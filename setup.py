"""Builds the libhdf5 interposer (instrumentation/interposer/h5interpose.c) with the machine's C compiler.

It is an LD_PRELOAD library, never imported; setuptools builds it as an (optional) extension so that
wheels, sdists and editable installs carry and build it. Without a compiler the install still succeeds
and traces say that calls below Python are not captured.
"""
from setuptools import Extension, setup

setup(ext_modules=[Extension(
    "instrumentation._h5interpose",
    sources=["instrumentation/interposer/h5interpose.c"],
    libraries=["dl", "pthread"],
    extra_compile_args=["-O2"],
    optional=True,
)])
