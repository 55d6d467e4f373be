// A fake NVTX tool (fake_nvtx_tool.hpp). NVTX's implementation is left out of this file
// (NVTX_NO_IMPL): it defines InitializeInjectionNvtx2_fnptr itself, which NVTX declares weak.

#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#include "fake_nvtx_tool.hpp"

#include <deque>
#include <mutex>

namespace launchwatch::testing {
namespace {

std::mutex mutex;
std::vector<std::string> heard;
std::deque<std::string> names;    // a handle is an index + 1 into names (domains and strings alike)
thread_local std::vector<nvtxDomainHandle_t> open;

void record(std::string event) {
  std::lock_guard lock{mutex};
  heard.push_back(std::move(event));
}

std::uintptr_t intern(const char* text) {
  std::lock_guard lock{mutex};
  names.emplace_back(text);
  return names.size();
}

std::string name_of(const void* handle) {
  std::lock_guard lock{mutex};
  return names.at(reinterpret_cast<std::uintptr_t>(handle) - 1);
}

nvtxDomainHandle_t NVTX_API create_domain(const char* name) {
  return reinterpret_cast<nvtxDomainHandle_t>(intern(name));
}
nvtxStringHandle_t NVTX_API register_string(nvtxDomainHandle_t, const char* text) {
  return reinterpret_cast<nvtxStringHandle_t>(intern(text));
}
int NVTX_API push(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* attributes) {
  const std::string name = attributes->messageType == NVTX_MESSAGE_TYPE_REGISTERED
                               ? name_of(attributes->message.registered)
                               : std::string{attributes->message.ascii};
  record("push " + name_of(domain) + ":" + name);
  open.push_back(domain);
  return static_cast<int>(open.size() - 1);
}
int NVTX_API pop(nvtxDomainHandle_t domain) {
  record("pop " + name_of(domain));
  if (!open.empty()) open.pop_back();
  return static_cast<int>(open.size());
}

int NVTX_API initialize(NvtxGetExportTableFunc_t get_export_table) {
  const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  NvtxFunctionTable table = nullptr;
  unsigned int size = 0;
  if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &table, &size) == 0) return 0;
  *table[NVTX_CBID_CORE2_DomainCreateA] = reinterpret_cast<NvtxFunctionPointer>(&create_domain);
  *table[NVTX_CBID_CORE2_DomainRegisterStringA] = reinterpret_cast<NvtxFunctionPointer>(&register_string);
  *table[NVTX_CBID_CORE2_DomainRangePushEx] = reinterpret_cast<NvtxFunctionPointer>(&push);
  *table[NVTX_CBID_CORE2_DomainRangePop] = reinterpret_cast<NvtxFunctionPointer>(&pop);
  return 1;
}

}  // namespace

std::vector<std::string> heard_ranges() {
  std::lock_guard lock{mutex};
  return heard;
}

void forget_heard_ranges() {
  std::lock_guard lock{mutex};
  heard.clear();
}

}  // namespace launchwatch::testing

extern "C" {
NvtxInitializeInjectionNvtxFunc_t InitializeInjectionNvtx2_fnptr = &launchwatch::testing::initialize;
}
