"""Builds gpufeed._C with the project's CMake (target gpufeed_python: the
same build definition as a plain CMake build) and packages it with the
pure-Python files. Extra CMake arguments: the environment variable
GPUFEED_CMAKE_ARGS (e.g. "-DGPUFEED_CUDA=OFF" or "-DGPUFEED_STATIC_DEPS=ON").
"""

import os
import re
import shlex
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def version():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        m = re.search(r"project\(gpufeed VERSION ([0-9.]+)", f.read())
    return m.group(1) if m else "0.0.0"


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build = os.path.abspath(os.path.join(self.build_temp, "cmake"))
        os.makedirs(build, exist_ok=True)
        args = ["-DCMAKE_BUILD_TYPE=Release", "-DGPUFEED_PYTHON=ON",
                "-DGPUFEED_BUILD_TESTS=OFF",
                "-DPython3_EXECUTABLE=" + sys.executable]
        args += shlex.split(os.environ.get("GPUFEED_CMAKE_ARGS", ""))
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 1))
        subprocess.check_call(["cmake", "-S", ROOT, "-B", build] + args)
        subprocess.check_call(["cmake", "--build", build, "--target",
                               "gpufeed_python", "-j", jobs])
        built = os.path.join(build, "python", "gpufeed", "_C.abi3.so")
        dest = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copyfile(built, dest)


setup(
    version=version(),
    ext_modules=[Extension("gpufeed._C", sources=[], py_limited_api=True)],
    cmdclass={"build_ext": CMakeBuild},
    options={"bdist_wheel": {"py_limited_api": "cp311"}},
)
