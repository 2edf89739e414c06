"""Builds the C parts of the tracer with the machine's C compiler, all optional.

- The libhdf5 interposer (instrumentation/interposer/h5interpose.c): an LD_PRELOAD library, never
  imported; setuptools builds it as an extension so that wheels, sdists and editable installs carry and
  build it. Without it traces say that calls below Python are not captured.
- The link-time wrapper (instrumentation/interposer/h5wrap.c, the interposer's code for programs with a
  static libhdf5): an object file, instrumentation/ioadvisor_wrap.o, that `ioadvisor link-flags` names.
- The h5py read hook (instrumentation/hotpath/hotpath.c): without it the same hook runs in Python,
  slower (docs/tracing-overhead.md).
- The `ioadvisor` command's native front end (instrumentation/frontend/ioadvisor.c): it starts a traced native
  program before any interpreter, then execs the Python entry point (the `ioadvisor-python` script), which
  everything else goes to. Without it `ioadvisor` is the Python entry point's copy
  (instrumentation/frontend/ioadvisor).

Without a compiler the install still succeeds.
"""
import os
import shutil
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

# after setuptools: its distutils (setuptools has no build_scripts of its own; Python 3.12 has no distutils)
from distutils.ccompiler import new_compiler  # noqa: E402
from distutils.command.build_scripts import build_scripts  # noqa: E402
from distutils.sysconfig import customize_compiler  # noqa: E402

WRAPPER_SOURCE = "instrumentation/interposer/h5wrap.c"
FRONT_END = "instrumentation/frontend/ioadvisor"
"""The Python copy of the command, replaced by the native front end built from FRONT_END.c where it builds."""
HERE = os.path.dirname(os.path.abspath(__file__))


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


def _c_string(text):
    return '"' + "".join(c if " " <= c <= "~" and c not in '\\"?' else f"\\{ord(c):03o}" for c in text) + '"'


def front_end_config(inplace):
    """front_config.h: what the front end must agree on with the Python modules (their own values), and where
    the interposer is (``inplace``: the checkout's, for an editable install; else site-packages')."""
    sys.path.insert(0, HERE)
    try:
        from instrumentation import mpi, nativestart, partsdir, pendingbatch, preload, startup
    finally:
        sys.path.remove(HERE)
    text = {"PTH_LINE": startup.PTH_LINE, "PTH_NAME": startup.PTH_NAME, "HOLDERS": startup.HOLDERS,
            "FOLLOW_VAR": partsdir.ENV, "LOG_DIR_VAR": preload.LOG_DIR_VAR, "DEFAULT_TRACE": nativestart.DEFAULT_TRACE,
            "RUN_FILE": partsdir.RUN_FILE, "RECORDS_FILE": nativestart.RECORDS_FILE,
            "HDF5_MARK": nativestart.HDF5_VERSION_MARK.decode(), "PENDING": pendingbatch.PENDING,
            "SEALING": pendingbatch.SEALING, "CONVERTING": pendingbatch.CONVERTING,
            "STARTED_VAR": nativestart.FRONT_STARTED, "ARGV0_VAR": nativestart.FRONT_ARGV0,
            "PY_VERSION": sysconfig.get_python_version(), "PYTHON_SCRIPT": "ioadvisor-python",
            "LIB_FILE": preload.LIB_NAME + sysconfig.get_config_var("EXT_SUFFIX"),
            "INPLACE_DIR": os.path.join(HERE, "instrumentation") if inplace else ""}
    lines = [f"#define FC_{name} {_c_string(value)}" for name, value in text.items()]
    lines.append(f"#define FC_LAUNCH_NICE {int(nativestart.LAUNCH_NICE)}")
    variables = [rank for rank, _ in mpi.LAUNCHER_ENV]  # mpi.launched's variables
    lines.append("#define FC_MPI_VARS {" + ", ".join(map(_c_string, variables)) + "}")
    return "\n".join(lines) + "\n"


class BuildFrontEnd(build_scripts):
    """build_scripts (the Python copy of the command), then the native front end over it where it builds."""

    def run(self):
        super().run()
        ext = self.get_finalized_command("build_ext")
        inplace = bool(getattr(ext, "editable_mode", False) or ext.inplace)
        out = os.path.join(self.build_dir, os.path.basename(FRONT_END))
        try:
            compiler = new_compiler()
            customize_compiler(compiler)
            temp = os.path.join(ext.build_temp, "frontend")
            os.makedirs(temp, exist_ok=True)
            with open(os.path.join(temp, "front_config.h"), "w") as fh:
                fh.write(front_end_config(inplace))
            objects = compiler.compile([f"{FRONT_END}.c"], output_dir=temp, include_dirs=[temp],
                                       extra_postargs=["-O2"])
            compiler.link_executable(objects, "ioadvisor", output_dir=temp)
            shutil.copyfile(os.path.join(temp, "ioadvisor"), out)
            os.chmod(out, 0o755)
        except Exception as exc:  # noqa: BLE001 - optional, as the extensions are: the Python copy stays
            self.warn(f"the native front end was not built ({exc}): `ioadvisor` starts Python first")


setup(cmdclass={"build_ext": BuildWithWrapper, "build_scripts": BuildFrontEnd}, scripts=[FRONT_END],
      ext_modules=[Extension(
    "instrumentation._hotpath",
    sources=["instrumentation/hotpath/hotpath.c", "instrumentation/hotpath/fold.c", "instrumentation/hotpath/passes.c"],
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
