# Sourced by the device scripts: sets cupti_args to the CMake arguments that find CUPTI.
# CUPTI ships with the toolkit, under include/ and lib/ or extras/CUPTI; an image that installed the
# toolkit without it may still carry it elsewhere (a Python wheel's copy): point CMake there.
cupti_args=()
cuda_root=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")")")
if [ ! -e "$cuda_root/include/cupti.h" ] && [ ! -e "$cuda_root/extras/CUPTI/include/cupti.h" ]; then
  header=$(find / -xdev -name cupti.h -not -path '/proc/*' 2>/dev/null | head -n 1 || true)
  library=$(find / -xdev -name 'libcupti.so*' -not -path '/proc/*' 2>/dev/null | sort | head -n 1 || true)
  if [ -n "$header" ] && [ -n "$library" ]; then
    echo "CUPTI not beside nvcc ($cuda_root); using $header and $library"
    cupti_args=(-DLAUNCHWATCH_CUPTI_INCLUDE_DIR="$(dirname "$header")" -DLAUNCHWATCH_CUPTI_LIBRARY="$library")
  fi
fi
