// The C API's handover of CUPTI's kernel records to another CUPTI client and back (c_api.hpp):
// apart from c_api.cpp, which tests build without the CUDA bridge.

#include "c_api.hpp"
#include "cuda_bridge/live_bridge.hpp"

extern "C" {

int launchwatch_cupti_records_taken() {
  return launchwatch::detail::cuda_bridge::lend_live_bridge_records() ? 1 : 0;
}

int launchwatch_cupti_records_released() {
  return launchwatch::detail::cuda_bridge::take_live_bridge_records_back() ? 1 : 0;
}

}  // extern "C"
