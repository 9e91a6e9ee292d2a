# Source on a GPU machine that has no package access, from the repo root, with a .devkit/ folder there
# holding the kp sdist (pip download --no-binary :all: kp==0.9.0) and these Debian 12 amd64 packages
# (apt-get download): libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2 libvulkan-dev
# libfmt-dev libfmt9 glslang-tools spirv-tools.
# Installs the loader, unpacks the build inputs under /tmp/prefix, and builds kp with dmlgpu's patches
# (tools/build_kp.py) for that machine's python3 into /tmp/site. Then: python3 -m dmlgpu info.
_dmlgpu_device_env() {
  local kit=.devkit f
  for f in $kit/libvulkan1_*.deb $kit/libegl1_*.deb $kit/libglvnd0_*.deb $kit/libopengl0_*.deb \
           $kit/libgl1_*.deb $kit/libglx0_*.deb $kit/libgles2_*.deb; do dpkg -x "$f" /; done
  ldconfig
  mkdir -p /tmp/prefix /tmp/site
  for f in $kit/libvulkan-dev_*.deb $kit/libfmt-dev_*.deb $kit/libfmt9_*.deb $kit/glslang-tools_*.deb \
           $kit/spirv-tools_*.deb; do dpkg -x "$f" /tmp/prefix; done
  ln -sf /usr/lib/x86_64-linux-gnu/libvulkan.so.1 /tmp/prefix/usr/lib/x86_64-linux-gnu/libvulkan.so
  export LD_LIBRARY_PATH=/tmp/prefix/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export PATH=/tmp/prefix/usr/bin:$PATH
  export PYTHONPATH=$PWD:/tmp/site${PYTHONPATH:+:$PYTHONPATH}
  export DMLGPU_TREE_ONLY=1     # the tree is used as it is, not installed (tests/test_packaging.py)
  local pb; pb=$(python3 -c "import pybind11,os;print(os.path.dirname(pybind11.__file__))")
  CMAKE_PREFIX_PATH=/tmp/prefix/usr:$pb VULKAN_SDK=/tmp/prefix/usr \
    python3 tools/build_kp.py --sdist $kit/kp-0.9.0.tar.gz --target /tmp/site > /tmp/kpbuild.log 2>&1 ||
    { tail -30 /tmp/kpbuild.log; return 1; }
}
_dmlgpu_device_env
