"""Builds the C parts of the tracer with the machine's C compiler, all optional.

- The libhdf5 interposer (instrumentation/interposer/h5interpose.c): an LD_PRELOAD library, never
  imported; setuptools builds it as an extension so that wheels, sdists and editable installs carry and
  build it. Without it traces say that calls below Python are not captured.
- The link-time wrapper (instrumentation/interposer/h5wrap.c, the interposer's code for programs with a
  static libhdf5): an object file, instrumentation/ioadvisor_wrap.o, that `ioadvisor link-flags` names.
- The h5py read hook (instrumentation/hotpath/hotpath.c): without it the same hook runs in Python,
  slower (docs/tracing-overhead.md).

Without a compiler the install still succeeds.
"""
import os
import shutil

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

WRAPPER_SOURCE = "instrumentation/interposer/h5wrap.c"


class BuildWithWrapper(build_ext):
    """build_ext, then the wrapper's object beside the interposer (in place for editable installs)."""

    def run(self):
        super().run()
        out = self._wrapper_path()
        try:
            # position-independent: it links into PIE programs (the default) and others alike
            objects = self.compiler.compile([WRAPPER_SOURCE], output_dir=self.build_temp,
                                            extra_postargs=["-O2", "-fPIC"])
            os.makedirs(os.path.dirname(out), exist_ok=True)
            shutil.copyfile(objects[0], out)
        except Exception as exc:  # noqa: BLE001 - optional, as the extensions are: no compiler, no wrapper
            self.warn(f"the link-time wrapper was not built ({exc}): `ioadvisor link-flags` will say so")

    def _wrapper_path(self):
        return os.path.join(os.path.dirname(self.get_ext_fullpath("instrumentation._h5interpose")),
                            "ioadvisor_wrap.o")

    def get_outputs(self):
        built = [self._wrapper_path()] if os.path.exists(self._wrapper_path()) else []
        return super().get_outputs() + built


setup(cmdclass={"build_ext": BuildWithWrapper}, ext_modules=[Extension(
    "instrumentation._hotpath",
    sources=["instrumentation/hotpath/hotpath.c", "instrumentation/hotpath/fold.c"],
    extra_compile_args=["-O2"],
    optional=True,
), Extension(
    "instrumentation._h5interpose",
    sources=["instrumentation/interposer/h5interpose.c"],
    depends=[WRAPPER_SOURCE],
    libraries=["dl", "pthread"],
    extra_compile_args=["-O2"],
    optional=True,
)])
